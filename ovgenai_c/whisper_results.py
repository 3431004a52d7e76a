"""WhisperDecodedResults and WhisperDecodedResultChunk: what a WhisperPipeline call returns (pybind's names).

Read from whisper_pipeline.h: texts, scores, the timestamped chunks (``return_timestamps``), the string form and
the common perf metrics. From the bundled backend's extras (cdefs/95): ``language`` (else what needs no detection:
"en" for an English-only model, the one the config asked for, else None) and Whisper's stage durations in
``perf_metrics`` (a :class:`WhisperPerfMetrics`; its stage lists are empty on a library without them), and the
word timings (``words``, a list of :class:`WhisperWordTiming` when the call asked for ``word_timestamps``): the C ABI
has neither, so elsewhere ``words`` is None.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Dict, List, Optional, Sequence

from ._capi.whisper_pipeline import STAGES  # Whisper's stages, as the bundled backend's durations extra names them
from .results import MeanStdPair, PerfMetrics, mean_std_ms, results_text


@dataclass
class WhisperRawPerfMetrics:
    """Whisper's own stage durations in microseconds (openvino_genai.WhisperRawPerfMetrics): one per feature
    extraction, encoder inference, kept decoder step and word-timestamp pass. Empty where the library does not
    report them (upstream's C ABI has no getter; the bundled backend does)."""

    features_extraction_durations: List[float] = field(default_factory=list)
    encode_inference_durations: List[float] = field(default_factory=list)
    decode_inference_durations: List[float] = field(default_factory=list)
    word_level_timestamps_processing_durations: List[float] = field(default_factory=list)


class _StageDurations:
    """The stage getters of Whisper's and ASR's perf metrics (milliseconds; NaN where nothing was reported)."""

    def _stages(self) -> WhisperRawPerfMetrics:
        raise NotImplementedError

    def get_features_extraction_duration(self) -> MeanStdPair:
        return mean_std_ms(self._stages().features_extraction_durations)

    def get_encode_inference_duration(self) -> MeanStdPair:
        return mean_std_ms(self._stages().encode_inference_durations)

    def get_decode_inference_duration(self) -> MeanStdPair:
        return mean_std_ms(self._stages().decode_inference_durations)

    def get_word_level_timestamps_processing_duration(self) -> MeanStdPair:
        return mean_std_ms(self._stages().word_level_timestamps_processing_durations)


def stage_durations(stages: Optional[Dict[str, List[float]]], cls: type = WhisperRawPerfMetrics) -> "WhisperRawPerfMetrics":
    """The raw stage metrics of one call from the library's durations (None: it reports none; the bundled backend
    reports the word-timestamp stage as one sum over the call, 0 without word timestamps, as upstream records it)."""
    if stages is None:
        return cls()
    return cls(**{f"{k}_durations": list(stages.get(k, ())) for k in STAGES})


@dataclass
class WhisperPerfMetrics(_StageDurations, PerfMetrics):
    """A Whisper call's perf metrics (openvino_genai.WhisperPerfMetrics): the common ones and Whisper's stages."""

    whisper_raw_metrics: WhisperRawPerfMetrics = field(default_factory=WhisperRawPerfMetrics)

    def _stages(self) -> WhisperRawPerfMetrics:
        return self.whisper_raw_metrics


def base_fields(perf: PerfMetrics) -> Dict[str, object]:
    """The PerfMetrics fields of ``perf`` (to build a subclass' instance from it)."""
    return {f.name: getattr(perf, f.name) for f in fields(PerfMetrics)}


class WhisperDecodedResultChunk:
    """One timestamped segment: ``start_ts`` / ``end_ts`` in seconds (``end_ts`` -1.0 when the model predicted no
    end, as upstream), ``text``."""

    __slots__ = ("start_ts", "end_ts", "text")

    def __init__(self, start_ts: float = 0.0, end_ts: float = -1.0, text: str = "") -> None:
        self.start_ts = float(start_ts)
        self.end_ts = float(end_ts)
        self.text = text

    def __repr__(self) -> str:
        return f"WhisperDecodedResultChunk(start_ts={self.start_ts}, end_ts={self.end_ts}, text={self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WhisperDecodedResultChunk) and \
            (self.start_ts, self.end_ts, self.text) == (other.start_ts, other.end_ts, other.text)


class WhisperWordTiming:
    """One word of a transcription (``word_timestamps``): ``word`` (with its leading space, as the model wrote
    it), ``token_ids``, ``start_ts`` / ``end_ts`` in seconds."""

    __slots__ = ("word", "token_ids", "start_ts", "end_ts")

    def __init__(self, word: str = "", token_ids: Sequence[int] = (), start_ts: float = 0.0,
                 end_ts: float = 0.0) -> None:
        self.word = word
        self.token_ids = list(token_ids)
        self.start_ts = float(start_ts)
        self.end_ts = float(end_ts)

    def __repr__(self) -> str:
        return f"WhisperWordTiming(word={self.word!r}, start_ts={self.start_ts}, end_ts={self.end_ts})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WhisperWordTiming) and (self.word, self.token_ids, self.start_ts, self.end_ts) \
            == (other.word, other.token_ids, other.start_ts, other.end_ts)


class WhisperDecodedResults:
    """``texts`` (one per sequence: one for Whisper), ``scores``, ``chunks`` (a list with ``return_timestamps``,
    else None), ``language`` ("en", "de"; None where the library cannot tell), ``words`` (a list of
    :class:`WhisperWordTiming` with ``word_timestamps``, else None), ``perf_metrics``; ``str()`` as pybind's."""

    def __init__(self, texts: List[str], scores: List[float], chunks: Optional[List[WhisperDecodedResultChunk]] = None,
                 perf_metrics: Optional[PerfMetrics] = None, language: Optional[str] = None,
                 words: Optional[List[WhisperWordTiming]] = None) -> None:
        self.texts = list(texts)
        self.scores = list(scores)
        self.chunks = None if chunks is None else list(chunks)
        self.perf_metrics = perf_metrics if perf_metrics is not None else PerfMetrics()
        self.language = language
        self.words = None if words is None else list(words)

    def __str__(self) -> str:
        return results_text(self.texts, self.scores)

    def __repr__(self) -> str:
        n = "no chunks" if self.chunks is None else f"{len(self.chunks)} chunks"
        return f"WhisperDecodedResults(texts={self.texts!r}, {n})"


__all__ = ["WhisperDecodedResults", "WhisperDecodedResultChunk", "WhisperPerfMetrics", "WhisperRawPerfMetrics",
           "WhisperWordTiming", "stage_durations"]
