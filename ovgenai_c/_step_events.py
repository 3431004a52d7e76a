"""Awaiting a batching pipeline's steps in asyncio without a thread per wait.

The bundled pipeline's step signal (cdefs/93 ``get_event_fd``) is a non-blocking pipe that gets a byte after every
step, once the step's tokens, text and statuses are published, and reads end of file once the pipeline is freed.
:class:`StepEvents` keeps its own ``dup`` of it and lets coroutines of any number of event loops wait on it: a
loop watches the fd (``add_reader``) only while one of its coroutines waits. Whoever drains the pipe bumps a
counter and wakes the waiters of every loop, so a waiter that took :meth:`StepEvents.mark` before looking at its
handle never misses the step that came after the look.
"""
from __future__ import annotations

import asyncio
import os
import threading
import weakref
from typing import Dict, Optional, Set

_READ_BYTES = 4096


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _resolve(fut: "asyncio.Future[bool]", value: bool) -> None:
    if not fut.done():
        fut.set_result(value)


class StepEvents:
    """The step signal of one pipeline (``fd``: a descriptor of its pipe that this object owns and closes)."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._lock = threading.Lock()
        self._waiters: Dict[asyncio.AbstractEventLoop, Set["asyncio.Future[bool]"]] = {}
        self._seq = 0
        self._ended = False
        self._finalizer = weakref.finalize(self, _close, fd)

    @property
    def ended(self) -> bool:
        """Whether the pipeline is gone (its pipe read end of file)."""
        return self._ended

    def mark(self) -> int:
        """Take before looking at a handle; :meth:`wait` with it returns at once if a step came in between."""
        return self._seq

    async def wait(self, mark: int, timeout: Optional[float] = None) -> bool:
        """Wait for a step after ``mark`` (or the pipeline's end): True, or False when ``timeout`` seconds passed."""
        loop = asyncio.get_running_loop()
        fut: "asyncio.Future[bool]" = loop.create_future()
        with self._lock:
            if self._seq != mark or self._ended:
                return True
            waiters = self._waiters.get(loop)
            if waiters is None:
                loop.add_reader(self._fd, self._drain)  # first: a loop that cannot watch fds leaves nothing behind
                waiters = self._waiters[loop] = set()
            waiters.add(fut)
        timer = None if timeout is None else loop.call_later(max(timeout, 0.0), _resolve, fut, False)
        try:
            return await fut
        finally:
            if timer is not None:
                timer.cancel()
            with self._lock:
                waiters.discard(fut)
                if not waiters and self._waiters.get(loop) is waiters:
                    del self._waiters[loop]
                    loop.remove_reader(self._fd)

    def _drain(self) -> None:
        """The fd is readable (on the loop that watches it): empty the pipe, then wake every waiter."""
        ended = False
        while True:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                break
            except OSError:
                ended = True
                break
            if not data:
                ended = True
                break
            if len(data) < _READ_BYTES:
                break
        with self._lock:
            self._seq += 1
            if ended:
                self._ended = True
            here = asyncio.get_running_loop()
            for loop, waiters in self._waiters.items():
                if loop is here:
                    for fut in waiters:
                        _resolve(fut, True)
                else:
                    try:
                        loop.call_soon_threadsafe(self._wake, waiters)
                    except RuntimeError:  # that loop is closed: nobody waits there any more
                        pass
            if ended:  # end of file stays readable: stop watching now rather than when the waiters leave
                for loop in list(self._waiters):
                    if loop is here:
                        loop.remove_reader(self._fd)
                        del self._waiters[loop]

    @staticmethod
    def _wake(waiters: Set["asyncio.Future[bool]"]) -> None:
        for fut in list(waiters):
            _resolve(fut, True)
