"""A draft model for speculative decoding, as openvino_genai's ``draft_model(models_path, device, **properties)``.

``LLMPipeline(main_path, "CPU", draft_model=draft_model(draft_path, "CPU"))``: the draft proposes tokens, the main
model verifies several in one inference. The GenAI C API cannot pass a draft model; the bundled backend takes it
as its create property ``OVGENAI_C_DRAFT_MODEL`` (a JSON object), another library refuses it by name.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Tuple, Union

from . import errors

__all__ = ["DraftModel", "draft_model", "DRAFT_MODEL_PROPERTY"]

# The bundled backend's create property carrying the draft: {"path", "device", "properties": {name: value}}
DRAFT_MODEL_PROPERTY = "OVGENAI_C_DRAFT_MODEL"


class DraftModel:
    """The draft model's path, device and properties, checked when made (as GenAI reads the model there)."""

    __slots__ = ("models_path", "device", "properties")

    def __init__(self, models_path: Union[str, os.PathLike], device: str = "", **properties: Any) -> None:
        from .pipeline import check_model_path, property_strings  # (pipeline imports this module)

        if not isinstance(device, str):
            raise errors.DeviceError(f"draft_model(): device must be a str such as 'CPU', not {type(device).__name__}")
        self.models_path: str = check_model_path(models_path)
        self.device: str = device
        strings = property_strings(properties)
        for key, _ in strings:
            if key in (DRAFT_MODEL_PROPERTY, "draft_model", "prompt_lookup"):
                raise errors.InvalidParameterError(f"draft_model(): a draft model cannot have {key!r} of its own")
        self.properties: Tuple[Tuple[str, str], ...] = tuple(strings)

    def property_value(self, main_device: str) -> str:
        """The bundled backend's ``OVGENAI_C_DRAFT_MODEL`` value; no device given: the main model's."""
        spec: Dict[str, Any] = {"path": self.models_path, "device": self.device or main_device,
                                "properties": dict(self.properties)}
        return json.dumps(spec)

    def __repr__(self) -> str:  # (also the provider's session-pool key: every field, in a fixed order)
        props = "".join(f", {k}={v!r}" for k, v in self.properties)
        return f"DraftModel({self.models_path!r}, {self.device!r}{props})"


def draft_model(models_path: Union[str, os.PathLike], device: str = "", **properties: Any) -> DraftModel:
    """openvino_genai's speculative-decoding property: pass the result as ``LLMPipeline(..., draft_model=...)``.
    An empty device means the main model's."""
    return DraftModel(models_path, device, **properties)
