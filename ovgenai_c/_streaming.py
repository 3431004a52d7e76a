"""The streamer bridge between the C callback (made in :mod:`ovgenai_c._capi.llm_pipeline`) and Python: UTF-8
reassembly, the cancel token, user streamer results, exceptions stashed (never thrown into C)."""
from __future__ import annotations

import codecs
import collections
import enum
import time
from typing import TYPE_CHECKING, Any, Callable, List, Optional

if TYPE_CHECKING:  # (asyncio itself is imported by the loop that uses AsyncChunkQueue: not at import time)
    import asyncio

from ._owner import Wakeup


class StreamingStatus(enum.IntEnum):
    """What a streamer returns: go on, stop (keep the chat turn) or cancel (drop it)."""

    RUNNING = 0
    STOP = 1
    CANCEL = 2
    TOOL_CALL_STOP = 3  # openvino_genai's value; through the C ABI it ends the call like STOP


def status_from_streamer(value: Any) -> StreamingStatus:
    """Map a user streamer's return value like openvino_genai does: None/False → RUNNING, True → STOP."""
    if value is None or value is False:
        return StreamingStatus.RUNNING
    if value is True:
        return StreamingStatus.STOP
    if isinstance(value, StreamingStatus):
        return value
    if isinstance(value, int):
        return StreamingStatus(value)
    # other enums with the same names (e.g. openvino_genai.StreamingStatus)
    name = getattr(value, "name", None)
    if name in StreamingStatus.__members__:
        return StreamingStatus[name]
    raise TypeError(f"a streamer must return None, a bool or a StreamingStatus, not {type(value).__name__}")


def _to_c(status: StreamingStatus) -> int:
    """The C ABI knows RUNNING, STOP and CANCEL: a tool-call stop ends the call as STOP does."""
    return int(StreamingStatus.STOP if status == StreamingStatus.TOOL_CALL_STOP else status)


class Utf8Assembler:
    """Turns byte chunks into text, holding back a character split across chunks until it is whole (the decoder
    is made on the first chunk: a call that streams nothing pays nothing)."""

    __slots__ = ("_decoder",)

    def __init__(self) -> None:
        self._decoder: Any = None

    def feed(self, data: bytes) -> str:
        if self._decoder is None:
            self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        return self._decoder.decode(data, False)

    def flush(self) -> str:
        return "" if self._decoder is None else self._decoder.decode(b"", True)


class CancelFlag:
    """The cancel token: set once from any thread, read by the C callback (``threading.Event``'s set/is_set;
    nothing waits on it, so it is a plain attribute, not a condition variable)."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


class StreamBridge:
    """State of one streaming call. ``on_text`` receives whole-character text and may return a status."""

    def __init__(self, on_text: Optional[Callable[[str], Any]] = None,
                 on_tokens: Optional[Callable[[List[int]], Any]] = None, *, tokens_after_stop: bool = False) -> None:
        self.on_text = on_text
        self.on_tokens = on_tokens  # a token-level streamer (StreamerBase.write), through the bundled extra
        # ids the library still gives after a STOP/CANCEL reach on_tokens too (Whisper: GenAI streams a token that
        # finishes the sequence after a stop), their status ignored
        self.tokens_after_stop = tokens_after_stop
        self.cancel_event = CancelFlag()
        self.cancel_reason: Optional[str] = None
        self.assembler = Utf8Assembler()
        self.error: Optional[BaseException] = None
        self.returned: StreamingStatus = StreamingStatus.RUNNING
        self.chunks = 0
        self.text_parts: list = []

    def cancel(self, reason: str = "cancelled") -> None:
        if not self.cancel_event.is_set():
            self.cancel_reason = reason
            self.cancel_event.set()

    def _deliver(self, text: str) -> StreamingStatus:
        self.text_parts.append(text)
        if self.on_text is None:
            return StreamingStatus.RUNNING
        return status_from_streamer(self.on_text(text))

    def on_chunk(self, data: bytes) -> int:
        """Called from the C callback (owner thread). Never raises."""
        try:
            self.chunks += 1
            if self.returned != StreamingStatus.RUNNING:
                # After a STOP/CANCEL the library flushes the text its streamer still held back (GenAI's
                # TextStreamer.end()): that text is part of the answer and reaches the user's streamer as in
                # GenAI (its return value no longer matters). Not after our own cancel or a streamer error.
                text = self.assembler.feed(data)
                if text and self.error is None and not self.cancel_event.is_set():
                    self._deliver(text)
                return _to_c(self.returned)
            if self.cancel_event.is_set():
                self.returned = StreamingStatus.CANCEL
                return int(self.returned)
            text = self.assembler.feed(data)
            status = self._deliver(text) if text else StreamingStatus.RUNNING
            if self.cancel_event.is_set():
                status = StreamingStatus.CANCEL
            self.returned = status
            return _to_c(status)
        except BaseException as exc:  # stash: re-raised after the C call returns
            self.error = exc
            self.returned = StreamingStatus.CANCEL
            return int(StreamingStatus.CANCEL)

    def on_cancel_check(self) -> int:
        """Called from the cancel-only C callback (owner thread; nobody reads the text): CANCEL once the token is
        set, else what the call returned last (RUNNING). Never raises."""
        self.chunks += 1
        if self.returned == StreamingStatus.RUNNING and self.cancel_event.is_set():
            self.returned = StreamingStatus.CANCEL
        return _to_c(self.returned)

    def on_token_ids(self, ids: List[int]) -> int:
        """Called from the bundled token-streamer callback (owner thread): the step's ids to ``on_tokens``,
        which returns a status. Never raises; cancellation from outside wins as for text."""
        try:
            if self.returned != StreamingStatus.RUNNING:
                if self.tokens_after_stop and self.on_tokens is not None and self.error is None and \
                        not self.cancel_event.is_set():
                    self.on_tokens(ids)
                return _to_c(self.returned)
            if self.cancel_event.is_set():
                self.returned = StreamingStatus.CANCEL
                return int(self.returned)
            status = status_from_streamer(self.on_tokens(ids)) if self.on_tokens is not None else \
                StreamingStatus.RUNNING
            if self.cancel_event.is_set():
                status = StreamingStatus.CANCEL
            self.returned = status
            return _to_c(status)
        except BaseException as exc:  # stash: re-raised after the C call returns
            self.error = exc
            self.returned = StreamingStatus.CANCEL
            return int(StreamingStatus.CANCEL)

    def finish(self) -> None:
        """After C returned: deliver bytes still held back (as replacement characters if incomplete)."""
        if not self.chunks:  # no text came (no callback, or a cancel-only one): nothing is held back
            return
        tail = self.assembler.flush()
        if tail and self.error is None:
            try:
                self.text_parts.append(tail)
                if self.on_text is not None and not self.cancel_event.is_set():
                    self.on_text(tail)
            except BaseException as exc:
                self.error = exc

    @property
    def text(self) -> str:
        return "".join(self.text_parts)


END = object()  # after the last piece: the call has returned
DEADLINE = object()  # returned by ChunkQueue.get when the deadline passed first


class ChunkQueue:
    """Text pieces handed from the owner thread to a consumer thread, then :data:`END`; the consumer blocks on a
    :class:`~ovgenai_c._owner.Wakeup` (no polling, Ctrl-C stays live on the main thread)."""

    def __init__(self) -> None:
        self._items: "collections.deque[Any]" = collections.deque()
        self._wakeup = Wakeup()

    def put(self, item: Any) -> None:
        self._items.append(item)
        self._wakeup.set()

    def get(self, deadline: Optional[float] = None) -> Any:
        """The next item, or :data:`DEADLINE` once ``deadline`` (``time.monotonic()``) has passed first."""
        while True:
            if deadline is not None and time.monotonic() >= deadline:
                return DEADLINE
            if self._items:
                return self._items.popleft()
            self._wakeup.clear()
            if self._items:  # (put between the check and the clear)
                continue
            self._wakeup.wait(None if deadline is None else max(deadline - time.monotonic(), 0.0))


class AsyncChunkQueue:
    """Text pieces handed from the owner thread to a consumer on an asyncio loop, then :data:`END`. The owner
    appends and wakes the loop only when no wake-up is pending (one ``call_soon_threadsafe`` per batch of pieces,
    not per piece); the consumer takes every piece already there before it waits again (one future per wait,
    none per piece, and no task per deadline)."""

    __slots__ = ("_loop", "_items", "_wake_pending", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: "collections.deque[Any]" = collections.deque()
        self._wake_pending = False
        self._waiter: Optional[asyncio.Future] = None

    def put(self, item: Any) -> None:
        """From any thread (the owner's, or the loop's own)."""
        self._items.append(item)
        # A pending wake-up runs after this append, and the consumer looks at the items after it ran.
        if not self._wake_pending:
            self._wake_pending = True
            try:
                self._loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass

    def _wake(self) -> None:
        self._wake_pending = False
        self._wake_waiter()

    def _wake_waiter(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self, deadline: Optional[float] = None) -> Any:
        """The next item, or :data:`DEADLINE` once ``deadline`` (the loop's ``time()``) has passed first."""
        loop = self._loop
        while not self._items:
            if deadline is not None and loop.time() >= deadline:
                return DEADLINE
            waiter = self._waiter = loop.create_future()
            timer = None if deadline is None else loop.call_at(deadline, self._wake_waiter)
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
        return self._items.popleft()
