"""DecodedResults and PerfMetrics: plain Python values read out of the native objects (which are freed
right after the call that produced them, on the pipeline's owner thread)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, NamedTuple, Optional


class MeanStdPair(NamedTuple):
    """A mean and a standard deviation (milliseconds for durations, tokens/s for throughput)."""

    mean: float
    std: float


_PAIRS = ("ttft", "tpot", "ipot", "throughput", "inference_duration", "generate_duration",
          "tokenization_duration", "detokenization_duration", "chat_template_duration")


@dataclass
class PerfMetrics:
    """Performance of one generate call (or the pooled sum of several, with ``+``)."""

    load_time: float = 0.0
    num_generation_tokens: int = 0
    num_input_tokens: int = 0
    pairs: Dict[str, MeanStdPair] = field(default_factory=dict)
    # samples behind each mean, so that sums pool exactly like upstream's concatenated raw metrics
    samples: Dict[str, int] = field(default_factory=dict)

    def get_load_time(self) -> float:
        return self.load_time

    def get_num_generated_tokens(self) -> int:
        return self.num_generation_tokens

    def get_num_input_tokens(self) -> int:
        return self.num_input_tokens

    def _pair(self, name: str) -> MeanStdPair:
        return self.pairs.get(name, MeanStdPair(0.0, 0.0))

    def get_ttft(self) -> MeanStdPair:
        return self._pair("ttft")

    def get_tpot(self) -> MeanStdPair:
        return self._pair("tpot")

    def get_ipot(self) -> MeanStdPair:
        return self._pair("ipot")

    def get_throughput(self) -> MeanStdPair:
        return self._pair("throughput")

    def get_inference_duration(self) -> MeanStdPair:
        return self._pair("inference_duration")

    def get_generate_duration(self) -> MeanStdPair:
        return self._pair("generate_duration")

    def get_tokenization_duration(self) -> MeanStdPair:
        return self._pair("tokenization_duration")

    def get_detokenization_duration(self) -> MeanStdPair:
        return self._pair("detokenization_duration")

    def get_chat_template_duration(self) -> MeanStdPair:
        return self._pair("chat_template_duration")

    def __add__(self, other: "PerfMetrics") -> "PerfMetrics":
        if not isinstance(other, PerfMetrics):
            return NotImplemented
        pairs: Dict[str, MeanStdPair] = {}
        samples: Dict[str, int] = {}
        for name in set(self.pairs) | set(other.pairs):
            a, na = self._pair(name), self.samples.get(name, 1 if name in self.pairs else 0)
            b, nb = other._pair(name), other.samples.get(name, 1 if name in other.pairs else 0)
            n = na + nb
            if n == 0:
                pairs[name], samples[name] = MeanStdPair(0.0, 0.0), 0
                continue
            mean = (a.mean * na + b.mean * nb) / n
            # pooled variance of the union of both sample sets
            var = (na * (a.std ** 2 + (a.mean - mean) ** 2) + nb * (b.std ** 2 + (b.mean - mean) ** 2)) / n
            pairs[name], samples[name] = MeanStdPair(mean, math.sqrt(max(var, 0.0))), n
        return PerfMetrics(load_time=self.load_time,
                           num_generation_tokens=self.num_generation_tokens + other.num_generation_tokens,
                           num_input_tokens=self.num_input_tokens + other.num_input_tokens,
                           pairs=pairs, samples=samples)

    def __iadd__(self, other: "PerfMetrics") -> "PerfMetrics":
        total = self + other
        self.__dict__.update(total.__dict__)
        return self

    def to_dict(self) -> Dict[str, Any]:
        """Plain values, e.g. for JSON output."""
        d: Dict[str, Any] = {"load_time_ms": self.load_time, "num_input_tokens": self.num_input_tokens,
                             "num_generated_tokens": self.num_generation_tokens}
        for name in _PAIRS:
            p = self._pair(name)
            d[name] = {"mean": p.mean, "std": p.std}
        return d


def read_perf_metrics(lib: Any, ffi: Any, handle: Any, check: Callable) -> PerfMetrics:
    """Read every value of a native ``ov_genai_perf_metrics`` (the caller frees it)."""
    f = ffi.new("float*")
    n = ffi.new("size_t*")
    check(lib.ov_genai_perf_metrics_get_load_time(handle, f), "ov_genai_perf_metrics_get_load_time")
    load = float(f[0])
    check(lib.ov_genai_perf_metrics_get_num_generation_tokens(handle, n), "ov_genai_perf_metrics_get_num_generation_tokens")
    gen = int(n[0])
    check(lib.ov_genai_perf_metrics_get_num_input_tokens(handle, n), "ov_genai_perf_metrics_get_num_input_tokens")
    inp = int(n[0])
    mean, std = ffi.new("float*"), ffi.new("float*")
    pairs: Dict[str, MeanStdPair] = {}
    for name in _PAIRS:
        fn = "ov_genai_perf_metrics_get_" + name
        check(getattr(lib, fn)(handle, mean, std), fn)
        pairs[name] = MeanStdPair(float(mean[0]), float(std[0]))
    samples = {name: 1 for name in _PAIRS}
    for name in ("tpot", "ipot"):
        samples[name] = max(gen - 1, 1) if name == "tpot" else max(gen, 1)
    return PerfMetrics(load_time=load, num_generation_tokens=gen, num_input_tokens=inp, pairs=pairs, samples=samples)


_SCORED_LINE = re.compile(r"^(-?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|inf|nan)): ", re.M)


class DecodedResults(str):
    """Texts (one per returned sequence), their scores and the call's perf metrics.

    It is also the result's string form (a ``str``), because ``openvino_genai`` returns a plain ``str`` for a
    ``str`` prompt: code written for either works unchanged (``print(r)``, ``r.upper()``, ``r.perf_metrics``).
    """

    texts: List[str]
    scores: List[float]
    perf_metrics: PerfMetrics
    finish_reason: str  # "stop" (natural end / stop rule / streamer STOP), "length" or "cancel"

    def __new__(cls, texts: List[str], scores: List[float], perf_metrics: Optional[PerfMetrics] = None,
                finish_reason: str = "stop") -> "DecodedResults":
        if len(texts) == 1:
            text = texts[0]
        else:
            text = "\n".join(f"{s:.6f}: {t}" for s, t in zip(scores, texts))
        self = super().__new__(cls, text)
        self.texts = list(texts)
        self.scores = list(scores)
        self.perf_metrics = perf_metrics if perf_metrics is not None else PerfMetrics()
        self.finish_reason = finish_reason
        return self

    def __str__(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"DecodedResults(texts={self.texts!r}, finish_reason={self.finish_reason!r})"

    def __reduce__(self) -> Any:
        return (DecodedResults, (self.texts, self.scores, self.perf_metrics, self.finish_reason))

    @property
    def extended_perf_metrics(self) -> PerfMetrics:  # pybind name compatibility
        return self.perf_metrics


def split_results_string(text: str, expected: int) -> tuple:
    """Split the C string form of DecodedResults into (texts, scores).

    One sequence: the string is the text and its score is unknown through the C ABI (NaN).
    Several: lines ``"score: text"`` joined by newlines (texts may themselves hold newlines).
    """
    if expected <= 1:
        return [text], [math.nan]
    starts = [m for m in _SCORED_LINE.finditer(text)]
    if len(starts) < expected:
        return [text], [math.nan]
    # take the first `expected` markers that begin lines; texts run until the next marker
    chosen = starts[:expected] if len(starts) == expected else _pick_markers(text, starts, expected)
    texts, scores = [], []
    for i, m in enumerate(chosen):
        end = chosen[i + 1].start() - 1 if i + 1 < len(chosen) else len(text)
        texts.append(text[m.end():end])
        scores.append(float(m.group(1)))
    return texts, scores


def _pick_markers(text: str, starts: list, expected: int) -> list:
    # Prefer the first marker (position 0) and then the last expected-1 markers: generated text that happens
    # to contain "number: " at a line start is then attributed to the earlier sequence.
    first = [m for m in starts if m.start() == 0][:1] or starts[:1]
    rest = [m for m in starts if m.start() > first[0].start()]
    return first + rest[-(expected - 1):]
