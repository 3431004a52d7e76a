"""One request's generation on a leased provider, driven from the event loop.

The provider's :class:`~ovgenai_c.provider.ChatStream` runs the native call on the pipeline's owner thread; each
chunk is fetched in a worker thread. A batched stream (continuous batching, bundled backend) is awaited on the event
loop itself, woken by the pipeline's steps: no thread per token. :meth:`Generation.close` (client gone, timeout, error,
or done) closes the stream — a native CANCEL within one token, waiting until C has let go — and gives the provider
back to its slot.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import anyio

from .. import errors
from ..provider import ChatResult
from ..provider.options import check_options
from ..provider.thinking import CONTENT, Piece, ThinkingSplitter
from .errors import RequestTimeoutError
from .registry import ModelRegistry, ModelSlot


def _on_asyncio() -> bool:
    """Whether this runs on an asyncio loop (anyio may run on trio too)."""
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False


@dataclass
class Ask:
    """What to generate: ``messages`` (a list of chat messages) or a plain prompt ``str``; Ollama-style options."""

    messages: Any
    system: Optional[str] = None
    tools: Optional[List[Dict[str, Any]]] = None
    think: Optional[bool] = None
    options: Dict[str, Any] = field(default_factory=dict)
    raw: bool = False  # a plain prompt given to the model as it is (no chat template; Ollama's raw)


def clamp_options(options: Dict[str, Any], provider: Any) -> Dict[str, Any]:
    """Validated options with ``num_predict`` clamped to the model's context window (when known)."""
    opts = check_options(options)
    ctx = getattr(getattr(provider, "capabilities", None), "context_length", None)
    n = opts.get("num_predict")
    if ctx and n is not None and n > ctx:
        opts["num_predict"] = ctx
    return opts


def _raise_server_timeout(exc: BaseException, timeout: Optional[float]) -> None:
    """The provider was given the time left after queueing: its timeout is raised again naming the server's."""
    if isinstance(exc, errors.GenerationTimeoutError) and timeout is not None:
        raise RequestTimeoutError(timeout, "(queueing included)") from exc


class Generation:
    """A started generation; iterate with :meth:`next_chunk` or :meth:`collect`, always :meth:`close`."""

    def __init__(self, slot: ModelSlot, provider: Any, stream: Any, started: float, load_s: float,
                 timeout: Optional[float] = None) -> None:
        self.slot = slot
        self.timeout = timeout  # the server's request timeout (queueing included)
        self.provider = provider
        self.stream = stream
        self.started = started
        self.load_s = load_s
        self.finished = False
        self.disconnected = False
        self._closed = False
        self.error: Optional[BaseException] = None
        # chunks awaited on the event loop itself (asyncio, a stream that can): no worker thread per token
        self._awaitable = hasattr(stream, "anext_chunk") and _on_asyncio()
        # a thinking model's stream says whether its prompt opened the reasoning: its chunks are split
        opened = getattr(stream, "thinking_opened", None)
        self._thinking: Optional[ThinkingSplitter] = None if opened is None else ThinkingSplitter(opened)
        # a stream that gives its pieces apart itself (a remote endpoint's reasoning deltas)
        self._piecewise = hasattr(stream, "next_piece")

    @classmethod
    async def start(cls, registry: ModelRegistry, model: Optional[str], ask: Ask,
                    timeout: Optional[float]) -> "Generation":
        started = time.monotonic()
        slot = await registry.slot(model, "chat")
        provider = await slot.acquire(timeout)
        try:
            left = None if timeout is None else timeout - (time.monotonic() - started)
            if left is not None and left <= 0:
                raise RequestTimeoutError(timeout or 0.0, "waiting in the queue")
            opts = clamp_options(ask.options, provider)
            t0 = time.monotonic()

            def begin() -> Any:
                raw = {"raw": True} if ask.raw else {}  # only when asked: a provider may not know the keyword
                return provider.stream(ask.messages, ask.tools or None, system=ask.system, think=ask.think,
                                       timeout=left, **raw, **opts)

            stream = await anyio.to_thread.run_sync(begin)
            load_s = time.monotonic() - t0
        except BaseException as exc:
            slot.release(provider)
            slot.stats.failed += 1
            _raise_server_timeout(exc, timeout)
            raise
        return cls(slot, provider, stream, started, load_s, timeout)

    @property
    def result(self) -> Optional[ChatResult]:
        return getattr(self.stream, "result", None)

    async def next_chunk(self) -> Optional[str]:
        """The next text piece, or None when the answer is complete (then :attr:`result` is set)."""
        if self._awaitable:  # a batched stream: awaited on the loop, woken by the pipeline's steps
            return await self._read(self.stream.anext_chunk, on_loop=True)
        return await self._read(lambda: next(self.stream, None))

    async def _read(self, read: Any, on_loop: bool = False) -> Any:
        """What ``read()`` gives next (awaited on the loop, or called in a worker thread), None at the end; closes
        the generation at the end or on an error."""
        if self.finished:
            return None
        try:
            item = await read() if on_loop else await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
        except BaseException as exc:
            # cancelled: the client went away; closed under it (a disconnect): the stream's end is no failure
            if not isinstance(exc, anyio.get_cancelled_exc_class()) and not self._closed:
                self.error = exc
            await self.close()
            _raise_server_timeout(exc, self.timeout)
            raise
        if item is None:
            self.finished = True
            await self.close()
        return item

    async def next_pieces(self) -> Optional[List[Piece]]:
        """The next text as ``(kind, text)`` pieces — kind "thinking" (a thinking model's reasoning) or "content",
        by :mod:`ovgenai_c.provider.thinking`'s rule, which the final :attr:`result` follows too, or as a remote
        endpoint streamed them apart — possibly none yet; None when the answer is complete."""
        if self._piecewise:
            piece = await self._read(self.stream.next_piece)
            return None if piece is None else [piece]
        chunk = await self.next_chunk()
        splitter = self._thinking
        if chunk is None:
            if splitter is not None:
                self._thinking = None
                rest = splitter.finish()
                if rest:
                    return rest
            return None
        if splitter is None:
            return [(CONTENT, chunk)] if chunk else []
        return splitter.feed(chunk)

    async def answer(self, receive: Any = None) -> Optional[ChatResult]:
        """:meth:`collect`, then :meth:`close` however it ends: a whole (non-streamed) answer, None when the client
        went away (its route answers 499)."""
        try:
            return await self.collect(receive)
        finally:
            await self.close()

    async def collect(self, receive: Any = None) -> Optional[ChatResult]:
        """Run to the end. ``receive`` (the ASGI receive): a client disconnect cancels the generation (and then
        None is returned: nobody is listening; the pending read, which the cancel may end with an error such as
        PipelineClosedError, is not a failure)."""
        async with anyio.create_task_group() as tg:
            if receive is not None:
                async def watch() -> None:
                    while True:
                        message = await receive()
                        if message.get("type") == "http.disconnect":
                            self.disconnected = True
                            await self.close()
                            return
                tg.start_soon(watch)
            failure: Optional[Exception] = None
            try:
                while await self.next_chunk() is not None:
                    pass
            except Exception as exc:  # raised below, not wrapped in the task group's ExceptionGroup
                failure = exc
            finally:
                tg.cancel_scope.cancel()
        if self.disconnected:  # a quiet cancel (counted as one by close()): whatever the closed stream raised
            return None
        if failure is not None:
            raise failure
        return self.result

    async def close(self) -> None:
        """Cancel natively if unfinished, wait for C, release the provider (idempotent; shielded)."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            try:
                if self._awaitable:  # cancels and frees the handle: no native wait
                    self.stream.close()
                else:
                    await anyio.to_thread.run_sync(self.stream.close)
            finally:
                stats = self.slot.stats
                res = self.result
                if self.finished and res is not None and not self.disconnected:
                    stats.completed += 1
                    stats.last_finish_reason = res.finish_reason
                    stats.last_completion_tokens = res.usage.get("completion_tokens")
                elif self.error is not None:
                    stats.failed += 1
                else:
                    stats.cancelled += 1
                    stats.last_finish_reason = "cancel"
                    stats.last_completion_tokens = None
                self.slot.release(self.provider)
