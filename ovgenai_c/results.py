"""DecodedResults and PerfMetrics: plain Python values read out of the native objects (by
:mod:`ovgenai_c._capi.perf_metrics` and :mod:`ovgenai_c._capi.llm_pipeline`). The text, scores and finish reasons
are read right after the call that produced them, on the pipeline's owner thread; a call's perf metrics are read
when first used (:meth:`PerfMetrics.deferred`), from a native copy that belongs to the results alone."""
from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Dict, List, NamedTuple, Optional


class MeanStdPair(NamedTuple):
    """A mean and a standard deviation (milliseconds for durations, tokens/s for throughput)."""

    mean: float
    std: float


class SummaryStats(NamedTuple):
    """Mean, standard deviation, minimum and maximum (openvino_genai.SummaryStats; -1 for each where there were no
    samples, as upstream)."""

    mean: float
    std: float
    min: float
    max: float

    def as_tuple(self) -> tuple:
        return (self.mean, self.std, self.min, self.max)


def mean_std_ms(samples: List[float]) -> MeanStdPair:
    """Mean and (population) standard deviation of microsecond samples, in milliseconds; NaN for no samples (where
    the library reports none)."""
    if not samples:
        return MeanStdPair(math.nan, math.nan)
    mean = sum(samples) / len(samples)
    std = math.sqrt(sum((x - mean) ** 2 for x in samples) / len(samples))
    return MeanStdPair(mean / 1000.0, std / 1000.0)


# the mean/std pairs of the C ABI's perf metrics getters (ov_genai_perf_metrics_get_<name>)
PAIRS = ("ttft", "tpot", "ipot", "throughput", "inference_duration", "generate_duration",
         "tokenization_duration", "detokenization_duration", "chat_template_duration")


@dataclass
class RawPerfMetrics:
    """The samples behind the means, in microseconds, as ``openvino_genai.RawPerfMetrics``. The bundled backend
    gives every series (an extra); through the C ABI alone each call contributes one sample to the per-call
    lists and the per-token lists (``sampling_durations`` too) stay empty, because no C getter carries them."""

    generate_durations: List[float] = field(default_factory=list)
    tokenization_durations: List[float] = field(default_factory=list)
    detokenization_durations: List[float] = field(default_factory=list)
    inference_durations: List[float] = field(default_factory=list)
    chat_template_durations: List[float] = field(default_factory=list)
    m_times_to_first_token: List[float] = field(default_factory=list)
    m_new_token_times: List[float] = field(default_factory=list)
    m_batch_sizes: List[int] = field(default_factory=list)
    m_durations: List[float] = field(default_factory=list)
    token_infer_durations: List[float] = field(default_factory=list)
    sampling_durations: List[float] = field(default_factory=list)
    grammar_compile_times: List[float] = field(default_factory=list)
    # ours (bundled backend, speculative decoding with a draft model; empty otherwise): per draft inference its
    # duration (µs) and the tokens it fed, per verification step the drafts proposed and accepted
    draft_infer_durations: List[float] = field(default_factory=list)
    draft_fed_tokens: List[int] = field(default_factory=list)
    draft_proposed_tokens: List[int] = field(default_factory=list)
    draft_accepted_tokens: List[int] = field(default_factory=list)

    def __add__(self, other: "RawPerfMetrics") -> "RawPerfMetrics":
        return RawPerfMetrics(**{k: getattr(self, k) + getattr(other, k) for k in self.__dataclass_fields__})


# per-call raw lists filled from the pairs a C call reports (mean in ms -> one sample in µs)
RAW_FROM_PAIR = {"generate_durations": "generate_duration", "tokenization_durations": "tokenization_duration",
                  "detokenization_durations": "detokenization_duration",
                  "inference_durations": "inference_duration", "chat_template_durations": "chat_template_duration",
                  "m_times_to_first_token": "ttft"}


@dataclass
class PerfMetrics:
    """Performance of one generate call (or the pooled sum of several, with ``+``)."""

    load_time: float = 0.0
    num_generation_tokens: int = 0
    num_input_tokens: int = 0
    pairs: Dict[str, MeanStdPair] = field(default_factory=dict)
    # samples behind each mean, so that sums pool exactly like upstream's concatenated raw metrics
    samples: Dict[str, int] = field(default_factory=dict)
    raw_metrics: RawPerfMetrics = field(default_factory=RawPerfMetrics)

    @classmethod
    def deferred(cls, load: Callable[[], "PerfMetrics"], **known: Any) -> "PerfMetrics":
        """A PerfMetrics whose values come from ``load()`` when first used (``known`` fields are readable
        without it); it then becomes an ordinary PerfMetrics. ``load`` must be safe to call from any thread
        and return the same values every time."""
        self = object.__new__(_DeferredPerfMetrics)
        self.__dict__.update(known)
        self.__dict__["_deferred_load"] = load
        return self

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

    def get_sampling_duration(self) -> MeanStdPair:
        """Sampling time per step (ms) from the raw series (the bundled backend's); NaN where the library does
        not report it (no C ABI getter)."""
        return mean_std_ms(self.raw_metrics.sampling_durations)

    def get_grammar_compiler_init_times(self) -> Dict[str, float]:
        """Structured output is not available through the C ABI: always empty."""
        return {}

    def get_grammar_compile_time(self) -> SummaryStats:
        """Structured output is not available through the C ABI: no grammar is compiled, all -1 (upstream's value
        without samples)."""
        return SummaryStats(-1.0, -1.0, -1.0, -1.0)

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
                           pairs=pairs, samples=samples, raw_metrics=self.raw_metrics + other.raw_metrics)

    def __iadd__(self, other: "PerfMetrics") -> "PerfMetrics":
        total = self + other
        self.__dict__.update(total.__dict__)
        return self

    def to_dict(self) -> Dict[str, Any]:
        """Plain values, e.g. for JSON output."""
        d: Dict[str, Any] = {"load_time_ms": self.load_time, "num_input_tokens": self.num_input_tokens,
                             "num_generated_tokens": self.num_generation_tokens}
        for name in PAIRS:
            p = self._pair(name)
            d[name] = {"mean": p.mean, "std": p.std}
        return d


def measured_perf_metrics(generated: int, prompt: int, started: float, first: Optional[float], ended: float,
                          sequences: int = 1) -> PerfMetrics:
    """Perf metrics measured around a batch by the caller (seconds of one monotonic clock; ``first``: when the
    first token came, None: not seen): ``generated`` tokens of ``sequences`` sequences, the first of each counted in
    TTFT, the rest sharing the time after it (TPOT), throughput as 1000 / TPOT and the whole as the generate
    duration, as GenAI's continuous-batching metrics; in milliseconds."""
    total_ms = (ended - started) * 1000.0
    ttft_ms = ((first if first is not None else ended) - started) * 1000.0
    pairs = {"ttft": MeanStdPair(ttft_ms, 0.0), "generate_duration": MeanStdPair(total_ms, 0.0)}
    later = generated - sequences
    if later > 0:
        tpot = (total_ms - ttft_ms) / later
        pairs["tpot"] = MeanStdPair(tpot, 0.0)
        if tpot > 0:
            pairs["throughput"] = MeanStdPair(1000.0 / tpot, 0.0)
    elif total_ms > 0:
        pairs["throughput"] = MeanStdPair(generated * 1000.0 / total_ms, 0.0)
    return PerfMetrics(num_generation_tokens=generated, num_input_tokens=prompt, pairs=pairs)


def unread_loader(perf: Any) -> Optional[Callable[[], PerfMetrics]]:
    """The ``load`` of a :meth:`PerfMetrics.deferred` not used yet (None for any other value): calling it reads
    the values (and lets go of what they are read from) ahead of their first use."""
    if type(perf) is _DeferredPerfMetrics:
        return object.__getattribute__(perf, "__dict__").get("_deferred_load")
    return None


class _DeferredPerfMetrics(PerfMetrics):
    """A :meth:`PerfMetrics.deferred` before its first use: reading anything but the fields it was made with
    loads every value and turns it into a plain PerfMetrics (its class included, so equality, copies and pickles
    behave as for any other)."""

    def __getattribute__(self, name: str) -> Any:
        d = object.__getattribute__(self, "__dict__")
        if name in d and name != "_deferred_load":
            return d[name]
        if name == "get_num_generated_tokens" and "num_generation_tokens" in d:  # the count it was made with
            return object.__getattribute__(self, name)
        load = d.get("_deferred_load")
        if load is not None:
            full = load()
            for f in fields(PerfMetrics):
                d.setdefault(f.name, full.__dict__[f.name])
            d.pop("_deferred_load", None)
            object.__setattr__(self, "__class__", PerfMetrics)
        return object.__getattribute__(self, name)


# the raw series the bundled backend reports (cdefs/92), as openvino_genai.RawPerfMetrics names them, then its
# speculative-decoding series (ours)
RAW_SERIES = ("generate_durations", "tokenization_durations", "detokenization_durations", "chat_template_durations",
              "inference_durations", "token_infer_durations", "sampling_durations", "m_times_to_first_token",
              "m_durations", "m_batch_sizes", "m_new_token_times", "draft_infer_durations", "draft_fed_tokens",
              "draft_proposed_tokens", "draft_accepted_tokens")
COUNT_SERIES = ("m_batch_sizes", "draft_fed_tokens", "draft_proposed_tokens", "draft_accepted_tokens")


class SDPerfMetrics(PerfMetrics):
    """One model's metrics in speculative decoding (``openvino_genai.SDPerfMetrics``): a PerfMetrics with the time
    to the second token (its second step or inference) and the mean latency per token (main model) or per
    inference (draft model)."""

    def get_ttst(self) -> MeanStdPair:
        return self._pair("ttst")

    def get_latency(self) -> MeanStdPair:
        return self._pair("latency")


def _fields_of(perf: PerfMetrics) -> Dict[str, Any]:
    return {f.name: getattr(perf, f.name) for f in fields(PerfMetrics)}


class SDPerModelsPerfMetrics(SDPerfMetrics):
    """Speculative decoding's metrics (``openvino_genai.SDPerModelsPerfMetrics``, a call's
    ``extended_perf_metrics`` with a draft model): the call's own PerfMetrics, the main model's and the draft
    model's, and the draft tokens proposed and accepted. The draft's metrics are its inferences': TTFT / TTST its
    first / second inference (the first catches up on the prompt), TPOT, IPOT and latency per inference,
    ``get_num_generated_tokens()`` the drafts it proposed."""

    def __init__(self, perf: PerfMetrics) -> None:
        super().__init__(**_fields_of(perf))
        self.pairs = {**self.pairs, **self._main_extra()}

    def _main_extra(self) -> Dict[str, MeanStdPair]:
        times = self.raw_metrics.m_new_token_times
        ttst = MeanStdPair(times[1] - times[0], 0.0) if len(times) > 1 else MeanStdPair(0.0, 0.0)
        return {"ttst": ttst, "latency": mean_std_ms(self.raw_metrics.m_durations)
                if self.raw_metrics.m_durations else MeanStdPair(0.0, 0.0)}

    @property
    def main_model_metrics(self) -> SDPerfMetrics:
        return SDPerfMetrics(**_fields_of(self))

    @property
    def draft_model_metrics(self) -> SDPerfMetrics:
        durations = list(self.raw_metrics.draft_infer_durations)
        later = durations[1:]
        none = MeanStdPair(0.0, 0.0)
        tpot = mean_std_ms(later) if later else none
        total = sum(durations) / 1000.0
        pairs = {"ttft": MeanStdPair(durations[0] / 1000.0, 0.0) if durations else none,
                 "ttst": MeanStdPair(later[0] / 1000.0, 0.0) if later else none,
                 "tpot": tpot, "ipot": mean_std_ms(durations) if durations else none,
                 "latency": mean_std_ms(durations) if durations else none,
                 "throughput": MeanStdPair(1000.0 / tpot.mean, 0.0) if tpot.mean > 0 else none,
                 "inference_duration": MeanStdPair(total, 0.0), "generate_duration": MeanStdPair(total, 0.0)}
        raw = RawPerfMetrics(token_infer_durations=durations, m_durations=later, inference_durations=[total * 1000.0],
                             generate_durations=[total * 1000.0])
        return SDPerfMetrics(load_time=self.load_time, num_generation_tokens=self.get_num_draft_tokens(),
                             num_input_tokens=self.num_input_tokens, pairs=pairs, raw_metrics=raw)

    def get_num_draft_tokens(self) -> int:
        """Draft tokens proposed for verification."""
        return sum(self.raw_metrics.draft_proposed_tokens)

    def get_num_accepted_tokens(self) -> int:
        """Draft tokens the main model accepted."""
        return sum(self.raw_metrics.draft_accepted_tokens)

    def get_num_rejected_tokens(self) -> int:
        return self.get_num_draft_tokens() - self.get_num_accepted_tokens()

    def get_draft_acceptance_rate(self) -> float:
        proposed = self.get_num_draft_tokens()
        return self.get_num_accepted_tokens() / proposed if proposed else 0.0

    def get_num_draft_processed_tokens(self) -> int:
        """Tokens the draft model's inferences fed (the text it caught up on and its own drafts)."""
        return sum(self.raw_metrics.draft_fed_tokens)

    def get_draft_processed_to_candidate_ratio(self) -> float:
        proposed = self.get_num_draft_tokens()
        return self.get_num_draft_processed_tokens() / proposed if proposed else 0.0

    def get_draft_to_main_inference_duration_ratio(self) -> float:
        main = sum(self.raw_metrics.token_infer_durations)
        return sum(self.raw_metrics.draft_infer_durations) / main if main else 0.0


def speculative_perf_metrics(perf: Optional[PerfMetrics]) -> Optional[SDPerModelsPerfMetrics]:
    """A call's ``extended_perf_metrics``: speculative decoding's when a draft model ran, else None (as GenAI's)."""
    if perf is None or not perf.raw_metrics.draft_infer_durations:
        return None
    return SDPerModelsPerfMetrics(perf)


# a "score: " line start of the string form: GenAI writes each score with std::to_string (printf's "%f")
_SCORED_LINE = re.compile(r"^(-?(?:\d+\.\d{6}|inf|nan)): ", re.M)


class GenerationFinishReason(enum.IntEnum):
    """Why a sequence ended (``openvino_genai.GenerationFinishReason``)."""

    NONE = 0
    STOP = 1
    LENGTH = 2
    TOOL_CALL = 3


_FINISH = {"stop": GenerationFinishReason.STOP, "length": GenerationFinishReason.LENGTH,
           "cancel": GenerationFinishReason.STOP}
# the fields of DecodedResults.deferred() that come from its fill on first use
_DEFERRED_FIELDS = frozenset(("scores", "perf_metrics", "finish_reason", "_finish_reasons"))


class DecodedResults:
    """Texts (one per returned sequence), their scores, why each ended and the call's perf metrics.

    ``generate()`` returns this for a list of prompts or a conversation, as ``openvino_genai`` does; for a
    ``str`` prompt it returns :class:`DecodedText`, which is also the answer as a ``str``. ``str()`` gives the
    text of one sequence, or ``"score: text"`` lines for several (pybind's form).
    """

    texts: List[str]
    scores: List[float]
    perf_metrics: PerfMetrics
    finish_reason: str  # "stop" (natural end / stop rule / streamer STOP), "length" or "cancel"

    def __init__(self, texts: List[str], scores: List[float], perf_metrics: Optional[PerfMetrics] = None,
                 finish_reason: str = "stop", finish_reasons: Optional[List[int]] = None) -> None:
        self.texts = list(texts)
        self.scores = list(scores)
        self.perf_metrics = perf_metrics if perf_metrics is not None else PerfMetrics()
        self.finish_reason = finish_reason
        self._finish_reasons = None if finish_reasons is None else [GenerationFinishReason(r) for r in finish_reasons]

    @property
    def parsed(self) -> List[Dict[str, Any]]:
        """What parsers made of the texts (openvino_genai's ``parsed``): a TextParserStreamer's message, then one
        message dict per text from ``GenerationConfig.parsers``; empty when the call used neither."""
        return self.__dict__.get("_parsed", [])

    def set_parsed(self, messages: List[Dict[str, Any]]) -> None:
        """Set what :attr:`parsed` gives (the pipeline does, once the call's parsers have run)."""
        self.__dict__["_parsed"] = list(messages)

    @classmethod
    def deferred(cls, text: str, fill: Callable[[Dict[str, Any]], None]) -> "DecodedResults":
        """One sequence whose text is known now and whose other fields (scores, perf metrics, finish reason(s))
        ``fill(fields)`` puts into the instance's ``__dict__`` on first use — from any thread, the same values
        every time (it is called again, with the fields already there, by a thread that raced the first)."""
        self = str.__new__(cls, text) if issubclass(cls, str) else object.__new__(cls)
        d = self.__dict__
        d["texts"] = [text]
        d["_fill"] = fill
        return self

    def __dir__(self) -> List[str]:
        """The deferred fields too, before their first use."""
        return sorted((set(super().__dir__()) | _DEFERRED_FIELDS) - {"_fill"})

    def __getattr__(self, name: str) -> Any:
        # only reached for an attribute not set: the deferred fields of a result made by deferred()
        if name in _DEFERRED_FIELDS:
            d = self.__dict__
            fill = d.get("_fill")
            if fill is not None:
                fill(d)
                d.pop("_fill", None)
                return d[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def finish_reasons(self) -> List[GenerationFinishReason]:
        """One :class:`GenerationFinishReason` per text: the library's own where it tells them (the bundled
        backend), else derived from the call's outcome (a cancelled call then counts as STOP); TOOL_CALL where the
        streamer (or a TextParserStreamer's parser) ended the call with StreamingStatus.TOOL_CALL_STOP, as GenAI."""
        if self._finish_reasons is not None and len(self._finish_reasons) == len(self.texts):
            return list(self._finish_reasons)
        return [_FINISH.get(self.finish_reason, GenerationFinishReason.NONE)] * len(self.texts)

    @property
    def extended_perf_metrics(self) -> Optional["SDPerModelsPerfMetrics"]:
        """Speculative decoding's metrics when a draft model ran (bundled backend), else None, as openvino_genai."""
        return speculative_perf_metrics(self.perf_metrics)

    def __str__(self) -> str:
        return results_text(self.texts, self.scores)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(texts={self.texts!r}, finish_reason={self.finish_reason!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DecodedResults):
            return (self.texts, self.finish_reason) == (other.texts, other.finish_reason) and \
                all(a == b or (a != a and b != b) for a, b in zip(self.scores, other.scores))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> Any:
        return (type(self), (self.texts, self.scores, self.perf_metrics, self.finish_reason), self._state())

    def _state(self) -> Optional[Dict[str, Any]]:
        parsed = self.__dict__.get("_parsed")
        return None if not parsed else {"_parsed": parsed}


class VLMDecodedResults(DecodedResults):
    """What :class:`~ovgenai_c.VLMPipeline` returns, as ``openvino_genai.VLMDecodedResults`` (a DecodedResults, for
    a ``str`` prompt too). Its ``perf_metrics`` are the C API's (``ov_genai_perf_metrics``): the LLM metrics
    GenAI's VLMPerfMetrics extends; the C API gives no image-embedding durations."""


class DecodedText(str, DecodedResults):
    """The answer to a ``str`` prompt: a ``str`` (``openvino_genai`` returns a plain ``str`` there) that also
    carries the :class:`DecodedResults` fields (``r.perf_metrics``, ``r.texts``, ``r.finish_reasons``)."""

    def __new__(cls, texts: List[str], scores: List[float], perf_metrics: Optional[PerfMetrics] = None,
                finish_reason: str = "stop", finish_reasons: Optional[List[int]] = None) -> "DecodedText":
        self = super().__new__(cls, results_text(texts, scores))
        DecodedResults.__init__(self, texts, scores, perf_metrics, finish_reason, finish_reasons)
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # set up in __new__
        pass

    __str__ = str.__str__
    __eq__ = str.__eq__  # type: ignore[assignment]
    __hash__ = str.__hash__  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"DecodedText({str.__repr__(self)}, finish_reason={self.finish_reason!r})"

    def __reduce__(self) -> Any:
        return (DecodedText, (self.texts, self.scores, self.perf_metrics, self.finish_reason), self._state())


class EncodedResults:
    """Token ids per sequence, their scores, why each ended and the perf metrics: what ``generate()`` returns for
    token input (``TokenizedInputs`` / an ids tensor), as ``openvino_genai.EncodedResults``."""

    def __init__(self, tokens: List[List[int]], scores: List[float], perf_metrics: Optional[PerfMetrics] = None,
                 finish_reasons: Optional[List[int]] = None) -> None:
        self.tokens = [list(t) for t in tokens]
        self.scores = list(scores)
        self.perf_metrics = perf_metrics if perf_metrics is not None else PerfMetrics()
        self.finish_reasons = [GenerationFinishReason(r) for r in (finish_reasons or [])]

    @property
    def extended_perf_metrics(self) -> Optional["SDPerModelsPerfMetrics"]:
        """Speculative decoding's metrics when a draft model ran (bundled backend), else None, as openvino_genai."""
        return speculative_perf_metrics(self.perf_metrics)

    def __repr__(self) -> str:
        return f"EncodedResults(tokens={self.tokens!r}, scores={self.scores!r})"


def results_text(texts: List[str], scores: List[float]) -> str:
    """pybind's string form of results: the text of one sequence, else ``"score: text"`` lines."""
    if len(texts) == 1:
        return texts[0]
    return "\n".join(f"{s:.6f}: {t}" for s, t in zip(scores, texts))


def split_results_string(text: str, expected: int, scores: Optional[List[float]] = None) -> tuple:
    """Split the C string form of DecodedResults into (texts, scores).

    One sequence: the string is the text and its score is unknown through the C ABI (NaN).
    Several: lines ``"score: text"`` joined by newlines (texts may themselves hold newlines), each score written as
    printf's ``"%f"``. With the ``scores`` known (the bundled backend tells them) each text ends exactly where the
    next score's line starts; otherwise the score lines are recognised by their form.
    """
    if expected <= 1:
        return [text], [math.nan]
    if scores is not None and len(scores) == expected:
        texts = _split_at_scores(text, scores)
        if texts is not None:
            return texts, list(scores)
    starts = [m for m in _SCORED_LINE.finditer(text)]
    # a score is a sum of log-probabilities (beam search: divided by a length term), never above 0: a generated
    # line such as "1.500000: x" is text
    scored = [m for m in starts if not float(m.group(1)) > 0.0]
    starts = scored if len(scored) >= expected else starts
    if len(starts) < expected:
        return [text], [math.nan]
    # take the first `expected` markers that begin lines; texts run until the next marker
    chosen = starts[:expected] if len(starts) == expected else _pick_markers(text, starts, expected)
    texts, found = [], []
    for i, m in enumerate(chosen):
        end = chosen[i + 1].start() - 1 if i + 1 < len(chosen) else len(text)
        texts.append(text[m.end():end])
        found.append(float(m.group(1)))
    return texts, found


def _split_at_scores(text: str, scores: List[float]) -> Optional[List[str]]:
    """The texts of a string form whose scores are known, in order; None if the string is not of that form."""
    marks = ["%f: " % s for s in scores]
    if not text.startswith(marks[0]):
        return None
    texts, begin = [], len(marks[0])
    for mark in marks[1:]:
        at = text.find("\n" + mark, begin)
        if at < 0:
            return None
        texts.append(text[begin:at])
        begin = at + 1 + len(mark)
    texts.append(text[begin:])
    return texts


def _pick_markers(text: str, starts: list, expected: int) -> list:
    # Prefer the first marker (position 0) and then the last expected-1 markers: generated text that happens
    # to contain "number: " at a line start is then attributed to the earlier sequence.
    first = [m for m in starts if m.start() == 0][:1] or starts[:1]
    rest = [m for m in starts if m.start() > first[0].start()]
    return first + rest[-(expected - 1):]
