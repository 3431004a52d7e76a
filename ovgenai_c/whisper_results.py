"""WhisperDecodedResults and WhisperDecodedResultChunk: what a WhisperPipeline call returns (pybind's names).

Read from whisper_pipeline.h: texts, scores, the timestamped chunks (``return_timestamps``), the string form and
the base perf metrics; ``language`` from the bundled backend's extra (cdefs/95), else what needs no detection ("en"
for an English-only model, the one the config asked for, else None). Not in the C ABI, so not here with real
values: word timings (``words`` is None) and Whisper's own perf metrics (feature extraction, encoder / decoder
inference durations: ``perf_metrics`` is a plain :class:`~ovgenai_c.PerfMetrics`).
"""
from __future__ import annotations

from typing import List, Optional

from .results import PerfMetrics, results_text


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


class WhisperDecodedResults:
    """``texts`` (one per sequence: one for Whisper), ``scores``, ``chunks`` (a list with ``return_timestamps``,
    else None), ``language`` ("en", "de"; None where the library cannot tell), ``words`` (None: not in the C ABI),
    ``perf_metrics``; ``str()`` as pybind's."""

    def __init__(self, texts: List[str], scores: List[float], chunks: Optional[List[WhisperDecodedResultChunk]] = None,
                 perf_metrics: Optional[PerfMetrics] = None, language: Optional[str] = None) -> None:
        self.texts = list(texts)
        self.scores = list(scores)
        self.chunks = None if chunks is None else list(chunks)
        self.perf_metrics = perf_metrics if perf_metrics is not None else PerfMetrics()
        self.language = language
        self.words = None

    def __str__(self) -> str:
        return results_text(self.texts, self.scores)

    def __repr__(self) -> str:
        n = "no chunks" if self.chunks is None else f"{len(self.chunks)} chunks"
        return f"WhisperDecodedResults(texts={self.texts!r}, {n})"


__all__ = ["WhisperDecodedResults", "WhisperDecodedResultChunk"]
