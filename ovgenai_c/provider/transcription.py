"""Speech to text for the provider: Whisper model folders, the library's Whisper support, transcription results.

A provider on a Whisper IR folder has ``capabilities.transcribe`` (when the library exports whisper_pipeline.h)
and no chat / prompt / stream; :meth:`Provider.transcribe` runs :class:`ovgenai_c.WhisperPipeline`. The GenAI C
ABI cannot cancel or stream a transcription: a ``timeout`` stops it on the bundled backend (its cancel extra) and only
abandons the wait elsewhere (the pipeline finishes it first); ``on_text`` (``capabilities.transcribe_stream``) needs
the bundled backend's streaming extra, word timings (``capabilities.transcribe_words``) its word-timestamp extras and
a model with alignment heads."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..results import PerfMetrics

TASKS = ("transcribe", "translate")


def is_whisper_folder(path: Any) -> bool:
    """True for a folder holding a Whisper IR model (encoder, decoder, tokenizer, detokenizer)."""
    from ..whisper_pipeline import missing_whisper_files

    p = Path(os.fspath(path))
    return p.is_dir() and not missing_whisper_files(p)


def _loaded(library: Any) -> Any:
    """``library`` (a LoadedLibrary, a path, or None: the default discovery) loaded; None when none can be found."""
    from .. import errors, load_library, open_library

    try:
        return library if hasattr(library, "has_extra") else (
            open_library(os.fspath(library)) if library is not None else load_library())
    except errors.LibraryNotFoundError:
        return None


def whisper_unsupported_reason(library: Any) -> Optional[str]:
    """Why the library cannot transcribe (None when it exports every Whisper function, or when no library can be
    found yet: the pipeline says so when it is made)."""
    from ..whisper_pipeline import missing_functions

    lib = _loaded(library)
    if lib is None:
        return None
    missing = missing_functions(lib)
    if not missing:
        return None
    return (f"the {lib.kind} GenAI C library {lib.path} has no Whisper support (it does not export "
            f"{len(missing)} of the 57 whisper_pipeline.h / whisper_generation_config.h functions, e.g. "
            f"{missing[0]})")


def whisper_stream_unsupported_reason(library: Any) -> Optional[str]:
    """Why the library cannot stream a transcription's text (None when it can: the bundled backend's extra)."""
    from ..whisper_pipeline import STREAMING_EXTRA, no_streaming_reason

    lib = _loaded(library)
    if lib is None:
        return "no GenAI C library was found"
    return None if lib.has_extra(STREAMING_EXTRA) else no_streaming_reason(lib)


def whisper_sampling_unsupported_reason(library: Any) -> Optional[str]:
    """Why the library cannot sample a transcription (temperature > 0; None when it can: the bundled backend's extra
    sets a Whisper config's base fields, do_sample and temperature among them)."""
    from ..whisper_pipeline import BASE_EXTRA

    lib = _loaded(library)
    if lib is None:
        return "no GenAI C library was found"
    if lib.has_extra(BASE_EXTRA):
        return None
    return (f"the {lib.kind} GenAI C library decodes a transcription greedily: whisper_generation_config.h sets no "
            "sampling fields (do_sample, temperature); the bundled backend's extra sets them")


def whisper_words_unsupported_reason(library: Any, folder: Any) -> Optional[str]:
    """Why a Whisper folder on the library gives no word timings (None when it can: the bundled backend's extras
    and alignment heads in the folder's generation_config.json)."""
    from .. import errors
    from ..whisper_pipeline import WORDS_EXTRA, alignment_heads_of, no_words_reason

    lib = _loaded(library)
    if lib is None:
        return "no GenAI C library was found"
    if not lib.has_extra(WORDS_EXTRA):
        return no_words_reason(lib)
    try:
        heads = alignment_heads_of(os.fspath(folder))
    except (errors.GenAIError, OSError, ValueError) as exc:
        return f"{folder}'s generation_config.json cannot be read: {exc}"
    if not heads:
        return f"{folder}'s generation_config.json has no alignment_heads (word timestamps come from them)"
    return None


@dataclass
class TranscriptionResult:
    """One transcription: ``text``, timestamped ``segments`` (``start`` / ``end`` seconds, ``text``; with
    timestamps asked), the ``language`` (the detected one where the library reports it), the audio ``duration`` in
    seconds, the ``task``, the perf metrics and, with words asked, ``words`` (``word`` without its leading space,
    ``start`` / ``end`` seconds)."""

    text: str
    segments: Optional[List[Dict[str, Any]]]
    language: Optional[str]
    duration: float
    task: str
    perf: PerfMetrics = field(default_factory=PerfMetrics)
    words: Optional[List[Dict[str, Any]]] = None

    def to_dict(self) -> Dict[str, Any]:
        from .provider import perf_dict

        return {"text": self.text, "segments": self.segments, "words": self.words, "language": self.language,
                "duration": self.duration, "task": self.task, "perf": perf_dict(self.perf)}


def result_from(res: Any, samples: int, task: str) -> TranscriptionResult:
    """A :class:`TranscriptionResult` from WhisperDecodedResults of ``samples`` 16 kHz samples."""
    segments = None
    if res.chunks is not None:
        segments = [{"start": c.start_ts, "end": c.end_ts, "text": c.text} for c in res.chunks]
    words = None
    if res.words is not None:
        words = [{"word": w.word.strip(), "start": w.start_ts, "end": w.end_ts} for w in res.words]
    text = res.texts[0] if res.texts else ""
    return TranscriptionResult(text=text, segments=segments, language=res.language, duration=samples / 16000.0,
                               task=task, perf=res.perf_metrics, words=words)


__all__ = ["TASKS", "TranscriptionResult", "is_whisper_folder", "result_from", "whisper_sampling_unsupported_reason",
           "whisper_stream_unsupported_reason", "whisper_unsupported_reason", "whisper_words_unsupported_reason"]
