"""BatchedProvider: a :class:`~ovgenai_c.provider.Provider`'s model served by one
:class:`~ovgenai_c.ContinuousBatchingPipeline` (bundled backend only), so that concurrent requests share its decode
steps instead of each needing a pipeline of its own. Same request interface as the provider (``stream``,
``chat``, ``prompt_result``, ``capabilities``), used by the server for every concurrent request of a model.

Each request is added to the batch with the provider's config rules and chat template; nothing is reused between
requests (no chat state), so ``usage["prompt_tokens"]`` is always the whole prompt.
"""
from __future__ import annotations

import threading
import time
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional

from .. import errors
from ..batching import ContinuousBatchingPipeline, GenerationHandle, GenerationStatus
from ..chat import ChatHistory
from ..results import DecodedResults, measured_perf_metrics
from .provider import ChatResult, Messages, Provider
from .thinking import Piece, pieces

_WAIT_S = 0.1
_REASON = {0: "cancel", 1: "stop", 2: "length"}
# properties of the provider that are for LLMPipeline's single-request engine only (the batch runs PagedAttention,
# whose compiled blob OpenVINO cannot re-import)
_NOT_FOR_BATCHING = ("ATTENTION_BACKEND", "CACHE_DIR")


def can_batch(provider: Any) -> bool:
    """Whether ``provider`` (a Provider) can be served through continuous batching: the bundled backend, an IR
    folder or a GGUF file, no draft model."""
    return type(provider) is Provider and provider.library_kind == "bundled" and provider.info.format in ("ir", "gguf") \
        and "draft_model" not in provider.properties  # (speculative decoding runs on LLMPipeline only)


class BatchedProvider(Provider):
    """The model of ``provider`` (its path, device, profile, options, capabilities) on one continuous-batching
    pipeline (created by :meth:`load` or the first request). Thread-safe: every request may come from its own
    thread."""

    def __init__(self, provider: Provider) -> None:
        vars(self).update(vars(provider))
        self.properties = {k: v for k, v in provider.properties.items() if k not in _NOT_FOR_BATCHING}
        self.pool = None  # no session pool: one pipeline, see sessions()
        self._pipe: Optional[ContinuousBatchingPipeline] = None
        self._lock = threading.Lock()
        self._load_time = 0.0
        self._ids = 0

    def __repr__(self) -> str:
        return f"<BatchedProvider {str(self.path)!r} on {self.device}>"

    def pipeline(self) -> ContinuousBatchingPipeline:
        """The pipeline (created on first use)."""
        with self._lock:
            if self._pipe is None or self._pipe.closed:
                t0 = time.monotonic()
                self._pipe = ContinuousBatchingPipeline(self.path, None, self.device, dict(self.properties),
                                                        library=self.library)
                self._load_time = time.monotonic() - t0
            return self._pipe

    def load(self) -> float:
        """Create the pipeline now; its load time in seconds."""
        self.pipeline()
        return self._load_time

    def sessions(self) -> List[Dict[str, Any]]:
        """The pipeline as one session entry (for /api/ps), with the batch's counters."""
        pipe = self._pipe
        if pipe is None or pipe.closed:
            return []
        metrics = pipe.get_metrics()
        return [{"path": str(self.path), "device": self.device, "properties": dict(self.properties),
                 "refs": metrics["running"] + metrics["waiting"], "load_time": self._load_time,
                 "batching": metrics}]

    def lease(self) -> Any:
        raise errors.NotSupportedError("a BatchedProvider has no session leases; its requests share one pipeline")

    def warm_up(self) -> None:
        """A 2-token greedy answer through the batch (OpenVINO prepares its kernels on the first inferences)."""
        self.prompt_result("Hi", num_predict=2, temperature=0)

    async def astream(self, messages: Messages, tools: Optional[List[Any]] = None, *,  # type: ignore[override]
                      system: Optional[str] = None, think: Optional[bool] = None,
                      **options: Any) -> AsyncIterator[str]:
        """Async iterator of text chunks (awaited on the event loop: no thread per chunk); closing it cancels the
        request."""
        import asyncio

        s = await asyncio.to_thread(self.stream, messages, tools, system=system, think=think, **options)
        try:
            while True:
                chunk = await s.anext_chunk()
                if chunk is None:
                    return
                yield chunk
        finally:
            s.close()

    def chat_result(self, decoded: DecodedResults, tools: bool, thinking_opened: Optional[bool] = None) -> ChatResult:
        """The provider's ChatResult of a batched answer (thinking split, tool calls parsed, usage)."""
        return self._result(decoded, tools, thinking_opened=thinking_opened)

    def close(self) -> None:
        with self._lock:
            if self._pipe is not None:
                self._pipe.close()
                self._pipe = None

    # --- requests
    def _start(self, messages: Messages, tools: Optional[List[Any]], system: Optional[str], think: Optional[bool],
               options: Dict[str, Any], raw: bool = False) -> "tuple[GenerationHandle, bool, Optional[bool]]":
        inputs = self._raw_prompt(messages, tools, system, think) if raw else \
            self._inputs(messages, tools, system, think)
        kw = self._config_kwargs(options)
        pipe = self.pipeline()
        _, opened = self._prepare(pipe, inputs, kw, raw, "prompt" if isinstance(messages, str) else "messages")
        config = pipe.get_config()
        if kw:
            config.update_generation_config(**kw)
        with self._lock:
            self._ids += 1
            request_id = self._ids
        if isinstance(inputs, ChatHistory):
            handle = pipe.add_request(request_id, inputs, config)
            return handle, bool(inputs.get_tools()), opened
        return pipe.add_request(request_id, inputs, config, templated=not raw), False, opened

    def stream(self, messages: Messages, tools: Optional[List[Any]] = None, *, system: Optional[str] = None,
               think: Optional[bool] = None, timeout: Optional[float] = None, raw: bool = False,
               **options: Any) -> "BatchedStream":
        """Iterate over the answer's text chunks (``raw``: the prompt str as it is, no chat template); closing the
        stream cancels the request (at the next step)."""
        self._require("stream")
        handle, has_tools, opened = self._start(messages, tools, system, think, options, raw)
        return BatchedStream(self, handle, has_tools, timeout, opened)

    def chat(self, messages: Messages, tools: Optional[List[Any]] = None, *, think: Optional[bool] = None,
             timeout: Optional[float] = None, **options: Any) -> ChatResult:
        with self.stream(messages, tools, think=think, timeout=timeout, **options) as s:
            for _ in s:
                pass
            assert s.result is not None
            return s.result

    def prompt_result(self, text: str, system: Optional[str] = None, *, think: Optional[bool] = None,
                      timeout: Optional[float] = None, **options: Any) -> ChatResult:
        self._require("prompt")
        if not isinstance(text, str):
            raise errors.InvalidParameterError(f"the prompt must be a str, not {type(text).__name__}")
        with self.stream(text, system=system, think=think, timeout=timeout, **options) as s:
            for _ in s:
                pass
            assert s.result is not None
            return s.result

    def prompt(self, text: str, system: Optional[str] = None, *, think: Optional[bool] = None,
               timeout: Optional[float] = None, **options: Any) -> str:
        return self.prompt_result(text, system=system, think=think, timeout=timeout, **options).text


class BatchedStream(Iterator[str]):
    """Text chunks of one batched answer; ``.result`` (a :class:`ChatResult`) once exhausted."""

    def __init__(self, provider: BatchedProvider, handle: GenerationHandle, tools: bool,
                 timeout: Optional[float], thinking_opened: Optional[bool] = None) -> None:
        self._provider = provider
        self.thinking_opened = thinking_opened  # as ChatStream's: None for a model that does not think
        self._handle = handle
        self._tools = tools
        self._timeout = timeout
        self._started = time.monotonic()
        self._first: Optional[float] = None  # when the first token was read
        self._deadline = None if timeout is None else self._started + timeout
        self._text: List[str] = []
        self._done = False
        self.result: Optional[ChatResult] = None

    def __iter__(self) -> "BatchedStream":
        return self

    def __next__(self) -> str:
        h = self._handle
        while not self._done:
            if self._deadline is not None and time.monotonic() > self._deadline:
                raise self._expire()
            h.wait(_WAIT_S)
            if h.can_read():
                h.read()  # take the ids (the text is what is streamed), so that the next wait blocks
                if self._first is None:
                    self._first = time.monotonic()
            text = self._take(h.read_text())
            if text:
                return text
        raise StopIteration

    async def anext_chunk(self) -> Optional[str]:
        """The next text chunk, awaited on the running asyncio loop (the pipeline's step signal wakes it: no worker
        thread), or None at the end (then :attr:`result` is set). Same timeout rule as iterating."""
        h = self._handle
        while not self._done:
            left = None if self._deadline is None else self._deadline - time.monotonic()
            try:
                if left is not None and left <= 0:
                    raise TimeoutError
                if self._first is None:  # the first token's time, not its text's (text may wait for more tokens)
                    if not await h.wait_async(left):
                        raise TimeoutError
                    self._first = time.monotonic()
                    continue
                text = await h.read_text_async(left)
            except TimeoutError:
                raise self._expire() from None
            text = self._take(text)
            if text:
                return text
        return None

    def _take(self, text: str) -> str:
        """``text`` just read, with what came with the end when the request has ended (then finished here); kept
        for :attr:`text` when not empty."""
        h = self._handle
        if h.get_status() != GenerationStatus.RUNNING:
            text += h.read_text()
            self._finish()
        if text:
            self._text.append(text)
        return text

    def _expire(self) -> errors.GenerationTimeoutError:
        """The deadline passed: cancel the request; the error to raise."""
        self.close()
        return errors.GenerationTimeoutError(f"the request exceeded its timeout of {self._timeout:.3g} s and was "
                                             "cancelled")

    def _finish(self) -> None:
        self._done = True
        h = self._handle
        status = h.get_status()
        if status == GenerationStatus.IGNORED:
            err = h.error()
            h.close()
            raise errors.GenAIError(f"the request failed: {err}")
        res = h.result()
        reason = "cancel" if status == GenerationStatus.CANCEL else _REASON.get(int(res.finish_reasons[0]), "stop")
        perf = measured_perf_metrics(len(res.tokens[0]), res.num_input_tokens, self._started, self._first,
                                     time.monotonic())
        decoded = DecodedResults(res.m_generation_ids, res.m_scores, perf, reason, [int(r) for r in res.finish_reasons])
        self.result = self._provider.chat_result(decoded, self._tools, self.thinking_opened)
        h.close()

    def pieces(self) -> Iterator[Piece]:
        """As :meth:`ChatStream.pieces`: the chunks as ``(kind, text)`` pieces, "thinking" or "content"."""
        return pieces(self, self.thinking_opened)

    @property
    def text(self) -> str:
        """The text streamed so far."""
        return "".join(self._text)

    def close(self) -> None:
        """Cancel the request if it still runs (at the next step: at most one more token is computed)."""
        if not self._done:
            self._done = True
            try:
                self._handle.cancel()
            except errors.PipelineClosedError:
                pass
        self._handle.close()

    def __enter__(self) -> "BatchedStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
