"""ASRDecodedResults and ASRDecodedResultChunk: what an :class:`~ovgenai_c.ASRPipeline` call returns (pybind's names).

As upstream's Whisper adapter builds them from a Whisper result: ``chunks`` is one list of segments per text (so
``result.chunks[0]`` is the segment list), each chunk with empty ``token_ids``; ``languages`` one entry per text.
From the GenAI C API: texts, scores, segments, the common perf metrics; from the bundled backend's extras the
language a multilingual model detects and the stage durations (:class:`ASRPerfMetrics`). Where the library does not
report them, a multilingual model's detected language is ``""`` (upstream's "unknown"; an English-only model's is
``"en"``, one the config asked for is that) and the stage lists are empty. Word timings (``words``, one list of
words per text, each an :class:`ASRDecodedResultChunk` with the word as ``text`` and its ``token_ids``) come from
the bundled backend's extra when the config asks for ``word_timestamps``: the C API has none (elsewhere None).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from .results import PerfMetrics, results_text
from .whisper_results import WhisperRawPerfMetrics, _StageDurations


@dataclass
class ASRRawPerfMetrics(WhisperRawPerfMetrics):
    """openvino_genai.ASRRawPerfMetrics: the stage durations in microseconds (WhisperRawPerfMetrics' fields)."""


@dataclass
class ASRPerfMetrics(_StageDurations, PerfMetrics):
    """An ASR call's perf metrics (openvino_genai.ASRPerfMetrics): the common ones and the stage durations."""

    asr_raw_metrics: ASRRawPerfMetrics = field(default_factory=ASRRawPerfMetrics)

    def _stages(self) -> WhisperRawPerfMetrics:
        return self.asr_raw_metrics


class ASRDecodedResultChunk:
    """One timestamped segment: ``start_ts`` / ``end_ts`` in seconds (``end_ts`` -1.0 when the model predicted no
    end), ``text``, ``token_ids`` (empty for a segment, as upstream's Whisper adapter leaves it)."""

    __slots__ = ("start_ts", "end_ts", "text", "token_ids")

    def __init__(self, start_ts: float = 0.0, end_ts: float = -1.0, text: str = "",
                 token_ids: Sequence[int] = ()) -> None:
        self.start_ts = float(start_ts)
        self.end_ts = float(end_ts)
        self.text = text
        self.token_ids = list(token_ids)

    def __repr__(self) -> str:
        return f"ASRDecodedResultChunk(start_ts={self.start_ts}, end_ts={self.end_ts}, text={self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ASRDecodedResultChunk) and (self.start_ts, self.end_ts, self.text, self.token_ids) \
            == (other.start_ts, other.end_ts, other.text, other.token_ids)


class ASRDecodedResults:
    """``texts``, ``scores``, ``languages`` (one per text), ``chunks`` (one segment list per text with
    ``return_timestamps``, else None), ``words`` (one word list per text with ``word_timestamps``, else None),
    ``perf_metrics``; ``str()`` as pybind's."""

    def __init__(self, texts: List[str], scores: List[float], languages: List[str],
                 chunks: Optional[List[List[ASRDecodedResultChunk]]] = None,
                 perf_metrics: Optional[PerfMetrics] = None,
                 words: Optional[List[List[ASRDecodedResultChunk]]] = None) -> None:
        self.texts = list(texts)
        self.scores = list(scores)
        self.languages = list(languages)
        self.chunks = None if chunks is None else [list(c) for c in chunks]
        self.words = None if words is None else [list(w) for w in words]
        self.perf_metrics = perf_metrics if perf_metrics is not None else PerfMetrics()

    def __str__(self) -> str:
        return results_text(self.texts, self.scores)

    def __repr__(self) -> str:
        n = "no chunks" if self.chunks is None else f"{sum(len(c) for c in self.chunks)} chunks"
        return f"ASRDecodedResults(texts={self.texts!r}, languages={self.languages!r}, {n})"


__all__ = ["ASRDecodedResults", "ASRDecodedResultChunk", "ASRPerfMetrics", "ASRRawPerfMetrics"]
