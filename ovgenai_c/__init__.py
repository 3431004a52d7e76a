"""ovgenai_c — OpenVINO GenAI through its C API, from Python, with no pybind module.

``import ovgenai_c as ov_genai`` works for the LLMPipeline / VLMPipeline / WhisperPipeline / GenerationConfig /
streamer / ChatHistory / PerfMetrics subset of ``openvino_genai``. Importing loads nothing native; the library is
found and loaded on first use (see :func:`library_info`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

__version__ = "0.1.0"

from .errors import (ConfigError, DeviceError, GenAIError, GenerationTimeoutError, LibraryNotFoundError,
                     ModelNotFoundError, NotSupportedError, OpenVINOVersionConflictError, PipelineClosedError)
from .config import GenerationConfig, StopCriteria
from .chat import ChatHistory
from .scheduler import SchedulerConfig
from .results import (DecodedResults, DecodedText, EncodedResults, GenerationFinishReason, MeanStdPair, PerfMetrics,
                      RawPerfMetrics, VLMDecodedResults)
from ._streaming import StreamingStatus
from ._loader import library_info, load_library, open_library
from .unsupported import ENUMS as _SCHEDULER_ENUMS, REFUSED as _REFUSED

_PARSERS = ("Parser", "ReasoningParser", "DeepSeekR1ReasoningParser", "Phi4ReasoningParser", "Llama3PythonicToolParser",
            "Llama3JsonToolParser", "VLLMParserWrapper", "IncrementalParser", "ReasoningIncrementalParser",
            "DeepSeekR1ReasoningIncrementalParser", "Phi4ReasoningIncrementalParser")  # (ovgenai_c.parsers.__all__)

_LAZY = {"LLMPipeline": ("pipeline", "LLMPipeline"), "VLMPipeline": ("vlm_pipeline", "VLMPipeline"),
         "VLMPipelineBase": ("vlm_pipeline", "VLMPipelineBase"),
         "TextStream": ("pipeline", "TextStream"),
         "draft_model": ("speculative", "draft_model"), "DraftModel": ("speculative", "DraftModel"),
         "Tokenizer": ("tokenizer", "Tokenizer"), "TokenizedInputs": ("tokenizer", "TokenizedInputs"),
         "Tensor": ("tensor", "Tensor"), "StreamerBase": ("streamers", "StreamerBase"),
         "TextStreamer": ("streamers", "TextStreamer"), "TextParserStreamer": ("streamers", "TextParserStreamer"),
         **{name: ("parsers", name) for name in _PARSERS},
         "WhisperPipeline": ("whisper_pipeline", "WhisperPipeline"),
         "ASRPipeline": ("asr_pipeline", "ASRPipeline"), "ASRGenerationConfig": ("asr_config", "ASRGenerationConfig"),
         "ASRDecodedResults": ("asr_results", "ASRDecodedResults"),
         "ASRDecodedResultChunk": ("asr_results", "ASRDecodedResultChunk"),
         "ASRPerfMetrics": ("asr_results", "ASRPerfMetrics"), "ASRRawPerfMetrics": ("asr_results", "ASRRawPerfMetrics"),
         "WhisperPerfMetrics": ("whisper_results", "WhisperPerfMetrics"),
         "WhisperRawPerfMetrics": ("whisper_results", "WhisperRawPerfMetrics"),
         "WhisperGenerationConfig": ("whisper_config", "WhisperGenerationConfig"),
         "WhisperDecodedResults": ("whisper_results", "WhisperDecodedResults"),
         "WhisperDecodedResultChunk": ("whisper_results", "WhisperDecodedResultChunk"),
         "WhisperWordTiming": ("whisper_results", "WhisperWordTiming"),
         "ContinuousBatchingPipeline": ("batching", "ContinuousBatchingPipeline"),
         "GenerationHandle": ("batching", "GenerationHandle"), "GenerationResult": ("batching", "GenerationResult"),
         "GenerationOutput": ("batching", "GenerationOutput"), "GenerationStatus": ("batching", "GenerationStatus"),
         "openvino_devices": ("_openvino", "openvino_devices"),
         **{name: ("unsupported", name) for name in _REFUSED + _SCHEDULER_ENUMS}}


def get_version() -> str:
    """As ``openvino_genai.get_version()``: the release of the GenAI library in use (loaded on first use): the
    official library's (from its file or archive name), else the bundled backend's own version."""
    versions = library_info().get("versions", {})
    return versions.get("archive") or versions.get("bundled") or "unknown"


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))


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
    from .vlm_pipeline import VLMPipeline
    from .whisper_config import WhisperGenerationConfig
    from .whisper_pipeline import WhisperPipeline
    from .asr_config import ASRGenerationConfig
    from .asr_pipeline import ASRPipeline
    from .asr_results import ASRDecodedResultChunk, ASRDecodedResults, ASRPerfMetrics, ASRRawPerfMetrics
    from ._openvino import openvino_devices
    from .whisper_results import (WhisperDecodedResultChunk, WhisperDecodedResults, WhisperPerfMetrics,
                                  WhisperRawPerfMetrics, WhisperWordTiming)
    from .streamers import StreamerBase, TextParserStreamer, TextStreamer
    from .parsers import (DeepSeekR1ReasoningIncrementalParser, DeepSeekR1ReasoningParser, IncrementalParser,
                          Llama3JsonToolParser, Llama3PythonicToolParser, Parser, Phi4ReasoningIncrementalParser,
                          Phi4ReasoningParser, ReasoningIncrementalParser, ReasoningParser, VLLMParserWrapper)
    from .tensor import Tensor
    from .tokenizer import TokenizedInputs, Tokenizer
    from .batching import (ContinuousBatchingPipeline, GenerationHandle, GenerationOutput, GenerationResult,
                           GenerationStatus)

__all__ = [
    "LLMPipeline", "VLMPipeline", "VLMPipelineBase", "VLMDecodedResults", "WhisperPipeline", "WhisperGenerationConfig", "WhisperDecodedResults",
    "WhisperDecodedResultChunk", "WhisperWordTiming", "ASRPipeline", "ASRGenerationConfig", "ASRDecodedResults", "ASRDecodedResultChunk",
    "ASRPerfMetrics", "ASRRawPerfMetrics", "WhisperPerfMetrics", "WhisperRawPerfMetrics", "TextStream", "ContinuousBatchingPipeline", "GenerationHandle", "GenerationResult",
    "GenerationOutput", "GenerationStatus", "Tokenizer", "TokenizedInputs", "Tensor", "StreamerBase", "TextStreamer",
    "TextParserStreamer", *_PARSERS,
    "GenerationConfig", "StopCriteria", "ChatHistory", "DecodedResults", "DecodedText", "EncodedResults",
    "PerfMetrics",
    "RawPerfMetrics", "GenerationFinishReason", "draft_model", "DraftModel", "SchedulerConfig",
    "MeanStdPair", "StreamingStatus", "get_version", "library_info", "load_library", "open_library", "openvino_devices", "GenAIError", "ConfigError",
    "DeviceError", "GenerationTimeoutError", "LibraryNotFoundError", "ModelNotFoundError", "NotSupportedError",
    "OpenVINOVersionConflictError",
    "PipelineClosedError",
]
