"""ovgenai_c — OpenVINO GenAI through its C API, from Python, with no pybind module.

``import ovgenai_c as ov_genai`` works for the LLMPipeline / GenerationConfig / streamer / ChatHistory /
PerfMetrics subset of ``openvino_genai``. Importing loads nothing native; the library is found and loaded
on first use (see :func:`library_info`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

from .errors import (ConfigError, DeviceError, GenAIError, GenerationTimeoutError, LibraryNotFoundError,
                     ModelNotFoundError, NotSupportedError, PipelineClosedError)
from .config import GenerationConfig, StopCriteria
from .chat import ChatHistory
from .scheduler import SchedulerConfig
from .results import DecodedResults, MeanStdPair, PerfMetrics
from ._streaming import StreamingStatus
from ._loader import library_info, load_library

_LAZY = {"LLMPipeline": ("pipeline", "LLMPipeline"), "TextStream": ("pipeline", "TextStream")}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ovgenai_c' has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover
    from .pipeline import LLMPipeline, TextStream

__all__ = [
    "LLMPipeline", "TextStream", "GenerationConfig", "StopCriteria", "ChatHistory", "DecodedResults", "PerfMetrics",
    "SchedulerConfig",
    "MeanStdPair", "StreamingStatus", "library_info", "load_library", "GenAIError", "ConfigError", "DeviceError",
    "GenerationTimeoutError", "LibraryNotFoundError", "ModelNotFoundError", "NotSupportedError",
    "PipelineClosedError",
]
