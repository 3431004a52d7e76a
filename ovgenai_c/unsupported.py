"""openvino_genai's classes for what the GenAI C API cannot carry (LoRA adapters, structured output, cache eviction,
sparse attention). They exist under pybind's names so ported code imports (``from openvino_genai import
StructuredOutputConfig``) and fails where it first uses one, with :class:`~ovgenai_c.NotSupportedError` saying why,
instead of an ImportError or AttributeError that reads like a packaging fault."""
from __future__ import annotations

from typing import Any

from .errors import NotSupportedError

ADAPTERS = ("LoRA adapters cannot pass through the GenAI C API (llm_pipeline.h has no adapter functions and "
            "create takes string properties only)")
STRUCTURED_OUTPUT = ("structured output (JSON schema, regex, grammar, structural tags) is not in the GenAI C API: "
                     "generation_config.h has no setter for it")
SCHEDULER_EXTRAS = ("the GenAI C API takes no SchedulerConfig, and the bundled backend's PagedAttention engine "
                    "implements neither cache eviction nor sparse attention")


class _Refused:
    """Constructing one raises NotSupportedError with the class's reason."""

    reason = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotSupportedError(f"{type(self).__name__}: {self.reason}")


class Adapter(_Refused):
    """openvino_genai.Adapter (a LoRA adapter): refused."""

    reason = ADAPTERS


class AdapterConfig(_Refused):
    """openvino_genai.AdapterConfig: refused."""

    reason = ADAPTERS


class StructuredOutputConfig(_Refused):
    """openvino_genai.StructuredOutputConfig: refused."""

    reason = STRUCTURED_OUTPUT


class StructuralTagsConfig(_Refused):
    """openvino_genai.StructuralTagsConfig: refused."""

    reason = STRUCTURED_OUTPUT


class StructuralTagItem(_Refused):
    """openvino_genai.StructuralTagItem: refused."""

    reason = STRUCTURED_OUTPUT


class CacheEvictionConfig(_Refused):
    """openvino_genai.CacheEvictionConfig: refused."""

    reason = SCHEDULER_EXTRAS


class SparseAttentionConfig(_Refused):
    """openvino_genai.SparseAttentionConfig: refused."""

    reason = SCHEDULER_EXTRAS


REFUSED = ("Adapter", "AdapterConfig", "StructuredOutputConfig", "StructuralTagsConfig", "StructuralTagItem",
           "CacheEvictionConfig", "SparseAttentionConfig")

__all__ = list(REFUSED)
