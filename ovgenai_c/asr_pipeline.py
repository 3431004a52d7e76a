"""ASRPipeline: openvino_genai's model-agnostic speech-recognition pipeline (2026.4), over the GenAI C API.

Upstream's ASRPipeline reads ``model_type`` from the folder's config.json and runs a Whisper model through its
WhisperPipeline (an adapter that converts the config and the results), Qwen3-ASR and Fun-ASR through their own
pipelines. The C API has a Whisper pipeline only (whisper_pipeline.h), so here a Whisper folder runs on
:class:`~ovgenai_c.WhisperPipeline`'s machinery (one owner thread, its cancellation rules: see that module) with ASR's
config and result types, and the other model types are refused by name before anything loads.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

from . import _loader, errors
from .asr_config import ASRGenerationConfig
from .asr_results import ASRDecodedResultChunk, ASRDecodedResults, ASRPerfMetrics, ASRRawPerfMetrics
from .whisper_config import WhisperGenerationConfig
from .whisper_pipeline import WhisperPipeline
from .whisper_results import base_fields, stage_durations

# upstream's ASRPipeline dispatch (config.json "model_type"); only Whisper has a C API
ASR_MODEL_TYPES = ("whisper", "qwen3_asr", "fun_asr")


def asr_model_type(models_path: Any) -> str:
    """The folder's config.json ``model_type``, checked as upstream's ASRPipeline checks it."""
    if not isinstance(models_path, (str, os.PathLike)):
        raise errors.InvalidParameterError(f"models_path must be a str or os.PathLike, not {type(models_path).__name__}")
    folder = Path(os.fsdecode(os.fspath(models_path)))
    config = folder / "config.json"
    if not folder.is_dir():
        raise errors.ModelNotFoundError(f"model folder not found: {folder}")
    try:
        with open(config, "r", encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise errors.ModelNotFoundError(f"{config} not found: ASRPipeline picks the pipeline by config.json's "
                                        "model_type") from None
    except (OSError, ValueError) as exc:
        raise errors.ConfigError(f"cannot read {config}: {exc}") from None
    value = data.get("model_type") if isinstance(data, dict) else None
    if not isinstance(value, str):
        raise errors.ConfigError("config.json must contain 'model_type' field for ASRPipeline model dispatch "
                                 f"({config})")
    return value


class ASRPipeline(WhisperPipeline):
    """Speech recognition (openvino_genai.ASRPipeline's names) for Whisper models through the GenAI C API.

    ``ASRPipeline(models_path, device="CPU", **properties)``; ``generate(audio_inputs, generation_config=None,
    streamer=None, *, timeout=None, **config_fields)`` → :class:`ASRDecodedResults`; ``get_generation_config()`` /
    ``set_generation_config()`` with :class:`ASRGenerationConfig`; ``get_tokenizer()``; ``close()``, context manager.
    """

    def __init__(self, models_path: Union[str, os.PathLike], device: str = "CPU", *,
                 library: Union[None, str, os.PathLike, _loader.LoadedLibrary] = None, **properties: Any) -> None:
        self._state = None
        kind = asr_model_type(models_path)
        if kind != "whisper":
            if kind in ASR_MODEL_TYPES:
                raise errors.NotSupportedError(
                    f"ASRPipeline: {models_path} is a {kind!r} model; the GenAI C API runs Whisper models only "
                    "(whisper_pipeline.h)")
            raise errors.NotSupportedError(f"Unsupported '{kind}' ASR model type (ASRPipeline runs whisper, "
                                           "qwen3_asr and fun_asr models; this binding whisper only)")
        self._context: Optional[str] = None
        super().__init__(models_path, device, library=library, **properties)
        if self._config.word_timestamps:
            # upstream's ASR config keeps its own default (False): the property only prepares the decoder, and a
            # call gets words when its config asks (as upstream's automatic_speech_recognition sample does)
            cfg = self._config.copy()
            cfg.word_timestamps = False
            WhisperPipeline.set_generation_config(self, cfg)

    # --- config --------------------------------------------------------------------------------------
    def get_generation_config(self) -> ASRGenerationConfig:  # type: ignore[override]
        """A copy of the pipeline's generation config."""
        cfg = ASRGenerationConfig.from_whisper(WhisperPipeline.get_generation_config(self))
        cfg.context = self._context
        return cfg

    def set_generation_config(self, config: WhisperGenerationConfig) -> None:
        """Make ``config`` (an ASRGenerationConfig; a WhisperGenerationConfig is taken too) the pipeline's own:
        ASR's rules, then the Whisper model's."""
        if isinstance(config, ASRGenerationConfig):
            config.validate()
        WhisperPipeline.set_generation_config(self, config)
        self._context = config.context if isinstance(config, ASRGenerationConfig) else None

    # --- recognition ---------------------------------------------------------------------------------
    def generate(self, audio_inputs: Any, generation_config: Optional[WhisperGenerationConfig] = None,  # type: ignore[override]
                 streamer: Any = None, *, timeout: Optional[float] = None, **kwargs: Any) -> ASRDecodedResults:
        """Recognise ``audio_inputs`` (16 kHz mono samples or a WAV file path), as WhisperPipeline.generate does;
        ``context`` (a Qwen3-ASR field) is accepted and, for a Whisper model, ignored, as upstream."""
        return super().generate(audio_inputs, generation_config, streamer, timeout=timeout,  # type: ignore[return-value]
                                **kwargs)

    def _call_config(self, generation_config: Any, kwargs: Dict[str, Any]) -> Tuple[Any, Dict[str, Any]]:
        kwargs.pop("context", None)
        if isinstance(generation_config, dict):
            generation_config = {k: v for k, v in generation_config.items() if k != "context"}
        elif isinstance(generation_config, ASRGenerationConfig):
            generation_config.validate()
        return generation_config, kwargs

    def _results(self, out: Any, effective: WhisperGenerationConfig) -> ASRDecodedResults:  # type: ignore[override]
        chunks = None if out.chunks is None else [[ASRDecodedResultChunk(*c) for c in out.chunks]]
        language = self._language(out, effective)
        perf = ASRPerfMetrics(**base_fields(out.perf), asr_raw_metrics=stage_durations(out.stages, ASRRawPerfMetrics))
        words = None if out.words is None else [[ASRDecodedResultChunk(w.start_ts, w.end_ts, w.word, w.token_ids)
                                                  for w in out.words]]
        return ASRDecodedResults(out.texts, out.scores, [language or ""] * len(out.texts), chunks, perf, words)


__all__ = ["ASRPipeline", "ASR_MODEL_TYPES", "asr_model_type"]
