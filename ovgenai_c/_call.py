"""One generation call — generate(), stream() or astream() — as one object: the owner job running it, the stream
bridge (the cancel token the C callback reads), the deadline and how the call ended. The three entry points share
its cancellation model: a deadline, Ctrl-C, closing a stream or cancelling a task all cancel natively through the
bridge, and the call then waits until C has returned before anything is raised."""
from __future__ import annotations

import functools
import math
import sys
import time
from typing import Any, Dict, Optional

from . import config as _config, errors, results as _results
from ._owner import Job
from ._streaming import StreamBridge, StreamingStatus


def check_timeout(timeout: Any) -> Optional[float]:
    """A timeout is None or a positive number of seconds (checked before anything starts)."""
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(timeout, bool)
                                or not timeout > 0):
        raise errors.InvalidParameterError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return timeout


def discard_results(job: Any) -> None:
    """Drop ``job``'s results (nobody gets them) and free their native object now, on any interpreter."""
    value, job.value = job.value, None
    discard = getattr(getattr(value, "native", None), "discard", None)
    if discard is not None:
        discard()


class GenerationCall:
    """A submitted generation: ``job`` runs it on the owner thread, ``bridge`` carries its text and cancel token."""

    __slots__ = ("job", "bridge", "effective", "timeout", "deadline", "entry", "cancellable", "parser_streamer",
                 "decoded_class")

    def __init__(self, bridge: StreamBridge, effective: Any, timeout: Optional[float], entry: str,
                 cancellable: bool = True) -> None:
        self.job: Job = None  # type: ignore[assignment]  # set once submitted (the caller does nothing after it)
        self.bridge = bridge
        self.effective = effective  # the config the call runs with (for the results' shape and finish reason)
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.entry = entry  # "generate()", "stream()" or "astream()", for messages
        self.cancellable = cancellable  # False: no callback reaches C, a cancel waits for the call's end
        self.parser_streamer: Any = None  # a TextParserStreamer whose message is the results' parsed[0]
        self.decoded_class: Any = _results.DecodedResults  # the class of decoded results not given as a str

    # --- state ---------------------------------------------------------------------------------------------
    def done(self) -> bool:
        """Whether C has returned."""
        return self.job.done()

    def left(self) -> Optional[float]:
        """Seconds until the deadline (None without one; never below 0)."""
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)

    @property
    def timed_out(self) -> bool:
        return self.bridge.cancel_reason == "timeout"

    def known_finish_reason(self) -> Any:
        """:meth:`finish_reason` when it does not depend on the generated-token count ("cancel", "stop"), else the
        max_new_tokens limit that count is compared with (an int)."""
        bridge = self.bridge
        if bridge.returned == StreamingStatus.CANCEL or (self.cancellable and bridge.cancel_event.is_set()):
            return "cancel"  # (a cancel asked of a call without a callback never reached C: it ran to its end)
        if bridge.returned in (StreamingStatus.STOP, StreamingStatus.TOOL_CALL_STOP):
            return "stop"
        limit = self.effective.get_max_new_tokens()
        return "stop" if limit == _config.SIZE_MAX else limit

    def finish_reason(self, generated_tokens: int) -> str:
        """How the call ended: "cancel" (cancelled from outside or by the streamer), "stop" (a stop rule, the
        model's end or the streamer's STOP) or "length" (``generated_tokens`` reached max_new_tokens)."""
        known = self.known_finish_reason()
        if isinstance(known, str):
            return known
        return "length" if generated_tokens >= known else "stop"

    # --- cancellation --------------------------------------------------------------------------------------
    def cancel(self, reason: str = "cancelled") -> None:
        """Ask C to stop at its next callback (the first reason given is kept)."""
        self.bridge.cancel(reason)

    def expire(self) -> None:
        """The deadline passed: cancel natively and wait (through Ctrl-C) until C has let go."""
        self.cancel("timeout")
        self.finish_waiting()

    def finish_waiting(self) -> None:
        """Wait until C has returned, through Ctrl-C presses; one that arrived is re-raised afterwards."""
        if self.job.wait_uninterrupted():
            raise KeyboardInterrupt

    def wait(self) -> None:
        """Block until C returns. The deadline cancels natively and the wait goes on until C has let go; Ctrl-C
        cancels, waits for C the same way, then re-raises KeyboardInterrupt."""
        try:
            if not self.job.event.wait(self.left()):
                self.cancel("timeout")
                self.job.event.wait()
        except KeyboardInterrupt:
            self.cancel("interrupt")
            if not self.cancellable and not self.job.done():
                sys.stderr.write(f"ovgenai_c: Ctrl-C: waiting for {self.entry} to finish — with no streamer and no "
                                 "timeout it runs without a callback on the official library (as pybind's generate), "
                                 "so it cannot be cancelled; pass timeout= or a streamer to make such calls "
                                 "cancellable\n")
            self.job.wait_uninterrupted()
            discard_results(self.job)  # results nobody gets: their native object goes now, not with the traceback
            raise

    # --- outcome -------------------------------------------------------------------------------------------
    def timeout_error(self) -> errors.GenerationTimeoutError:
        err = errors.GenerationTimeoutError(f"{self.entry} exceeded its timeout of {self.timeout} s and was "
                                            "cancelled")
        err.partial_text = self.bridge.text  # type: ignore[attr-defined]
        return err

    def outcome(self, as_text: bool = False, encoded: bool = False) -> Any:
        """Once C returned: raise what ended the call, else the results (:meth:`_results`); a streamer's
        TOOL_CALL_STOP makes every finish reason TOOL_CALL, as GenAI reports it (the C ABI ends such a call as STOP)."""
        results = self._results(as_text, encoded)
        if self.bridge.returned == StreamingStatus.TOOL_CALL_STOP:
            reasons = [_results.GenerationFinishReason.TOOL_CALL] * len(
                results.tokens if isinstance(results, _results.EncodedResults) else results.texts)
            if isinstance(results, _results.EncodedResults):
                results.finish_reasons = reasons
            else:
                results.__dict__["_finish_reasons"] = reasons
        return results

    def _results(self, as_text: bool = False, encoded: bool = False) -> Any:
        """Once C returned: raise what ended the call (the deadline — or C's own error meanwhile —, the user's
        streamer's exception, C's error), else the results: a :class:`DecodedText` (also a ``str``) for a ``str``
        prompt and one sequence, as pybind returns a ``str`` there, :class:`EncodedResults` for token input, else
        :attr:`decoded_class` (:class:`DecodedResults`; a VLM's :class:`VLMDecodedResults`)."""
        job, bridge, effective = self.job, self.bridge, self.effective
        if self.timed_out:
            discard_results(job)  # results nobody gets: their native object goes now, not with the traceback
            if job.error is not None and bridge.error is None:
                job.result()  # C failed on its own meanwhile: that error, not the timeout
            raise self.timeout_error()
        if bridge.error is not None:  # the user's streamer raised: surface it intact
            discard_results(job)
            job.error = None
            err, bridge.error = bridge.error, None
            raise err
        out = job.result()
        job.value = None  # the results are the caller's now (the owner may still hold the job for a moment)
        native = out.native
        n = effective.expected_sequences()
        if native is not None and not encoded and n == 1:
            # one sequence (as with greedy decoding): its text now, everything else read on first use
            cls = _results.DecodedText if as_text else self.decoded_class
            return cls.deferred(out.text, functools.partial(_fill_results, native, self.known_finish_reason()))
        if native is not None:
            perf, scores, reasons = native()
            out = type(out)(out.text, perf, out.tokens, scores, reasons)
        perf = out.perf or _results.PerfMetrics()
        if encoded:
            return _results.EncodedResults(out.tokens or [], out.scores or [], perf, out.finish_reasons)
        # the library may tell the scores (bundled): GenAI's values, not NaN, and where each text ends
        texts, scores = _results.split_results_string(out.text, n, out.scores)
        if out.scores is not None and len(out.scores) == len(texts):
            scores = out.scores
        # a str prompt gives a str only for one sequence, as pybind (several: DecodedResults)
        cls = _results.DecodedText if as_text and n == 1 else self.decoded_class
        return cls(texts=texts, scores=scores, perf_metrics=perf, finish_reason=self.finish_reason(perf.num_generation_tokens),
                   finish_reasons=out.finish_reasons)

    def parsed(self, results: Any) -> Any:
        """``results`` with their ``parsed`` messages, as GenAI's LLMPipeline makes them: the TextParserStreamer's
        message first, then the config's parsers run over every text (decoded results only; a call without
        either keeps the empty list)."""
        parsers = self.effective.parser_chain()
        streamer = self.parser_streamer
        if (parsers or streamer is not None) and isinstance(results, _results.DecodedResults):
            from .parsers import parse_texts

            streamed = None if streamer is None else streamer.get_parsed_message()
            results.set_parsed(parse_texts(results.texts, parsers, streamed))
        return results


def _fill_results(native: Any, reason: Any, fields: Dict[str, Any]) -> None:
    """The deferred fields of a one-sequence result (:meth:`DecodedResults.deferred`) from its kept native results
    (``native()``: perf metrics, scores, finish reasons); ``reason``: :meth:`GenerationCall.known_finish_reason`."""
    perf, scores, reasons = native()
    if not isinstance(reason, str):
        reason = "length" if perf.num_generation_tokens >= reason else "stop"
    fields.setdefault("perf_metrics", perf)
    fields.setdefault("scores", [scores[0]] if scores is not None and len(scores) == 1 else [math.nan])
    fields.setdefault("finish_reason", reason)
    fields.setdefault("_finish_reasons",
                      None if reasons is None else [_results.GenerationFinishReason(r) for r in reasons])
