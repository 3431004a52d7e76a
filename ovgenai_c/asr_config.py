"""ASRGenerationConfig: openvino_genai.ASRGenerationConfig (2026.4) — the config of :class:`~ovgenai_c.ASRPipeline`.

Upstream's ASRGenerationConfig holds WhisperGenerationConfig's fields plus ``context`` (a text context for Qwen3-ASR),
reads a generation_config.json the same way, and validates less than the Whisper config (the base rules, one
sequence, no assisted generation); its Whisper adapter turns it into a WhisperGenerationConfig field by field, without
``context``, and the Whisper pipeline then validates that. Here it is a :class:`~ovgenai_c.WhisperGenerationConfig`
with ``context`` and those rules, and :meth:`ASRGenerationConfig.to_whisper` is that conversion.
"""
from __future__ import annotations

import copy as _copy
from typing import Any, Dict, List, Optional

from .config import GenerationConfig
from .errors import InvalidParameterError
from .whisper_config import WhisperGenerationConfig


class ASRGenerationConfig(WhisperGenerationConfig):
    """Speech-recognition generation parameters (openvino_genai.ASRGenerationConfig's names and defaults):
    WhisperGenerationConfig's fields and ``context`` (Qwen3-ASR's; a Whisper model ignores it, as upstream)."""

    _KIND = "ASR "
    _EXTRA_FIELDS: Dict[str, Any] = {"context": None}
    context: Optional[str]

    def _coerce_field(self, name: str, value: Any) -> Any:
        if name != "context":
            return WhisperGenerationConfig._coerce_field(self, name, value)
        if value is not None and not isinstance(value, str):
            raise InvalidParameterError(f"ASRGenerationConfig.context must be a str or None, not {type(value).__name__}")
        return value

    def to_whisper(self) -> WhisperGenerationConfig:
        """The WhisperGenerationConfig a Whisper model runs: every field but ``context``."""
        out = WhisperGenerationConfig.__new__(WhisperGenerationConfig)
        object.__setattr__(out, "_values", dict(self._values))
        object.__setattr__(out, "_extra", dict(self._extra))
        whisper = _copy.deepcopy(self._whisper)
        whisper.pop("context", None)
        object.__setattr__(out, "_whisper", whisper)
        return out

    @classmethod
    def from_whisper(cls, config: WhisperGenerationConfig) -> "ASRGenerationConfig":
        """An ASRGenerationConfig with ``config``'s fields (``context`` unset)."""
        out = cls.__new__(cls)
        object.__setattr__(out, "_values", dict(config._values))
        object.__setattr__(out, "_extra", dict(config._extra))
        whisper = _copy.deepcopy(config._whisper)
        whisper["context"] = None
        object.__setattr__(out, "_whisper", whisper)
        return out

    def problems(self, eos_from_model: bool = False) -> List[str]:
        """Every rule of upstream's ASRGenerationConfig::validate() this config breaks."""
        return GenerationConfig.problems(self, eos_from_model) + self._speech_problems()


__all__ = ["ASRGenerationConfig"]
