"""The owner thread: one native thread per pipeline that runs every C call on it, in order.

Callers submit jobs and wait interruptibly; while C runs the GIL is released (cffi drops it around calls).
"""
from __future__ import annotations

import queue
import signal
import threading
import time
from typing import Any, Callable, List, Optional


class Job:
    """A call queued to an owner thread; :meth:`wait` returns its value or raises its exception."""

    __slots__ = ("fn", "event", "value", "error", "_callbacks", "_lock", "started")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.event = threading.Event()
        self.value: Any = None
        self.error: Optional[BaseException] = None
        self._callbacks: List[Callable[["Job"], None]] = []
        self._lock = threading.Lock()
        self.started = False

    def run(self) -> None:
        self.started = True
        try:
            self.value = self.fn()
        except BaseException as exc:  # handed to the waiting caller
            self.error = exc
        finally:
            self.fn = None  # drop references held by the closure
            with self._lock:
                self.event.set()
                callbacks, self._callbacks = self._callbacks, []
            for cb in callbacks:
                try:
                    cb(self)
                except Exception:
                    pass

    def add_done_callback(self, cb: Callable[["Job"], None]) -> None:
        """Call ``cb(job)`` when the job ends (at once, on this thread, if it already has)."""
        with self._lock:
            if not self.event.is_set():
                self._callbacks.append(cb)
                return
        cb(self)

    def done(self) -> bool:
        return self.event.is_set()

    def result(self) -> Any:
        if self.error is not None:
            err, self.error = self.error, None
            try:
                raise err
            finally:
                del err
        return self.value

    def wait(self, timeout: Optional[float] = None, on_timeout: Optional[Callable[[], None]] = None,
             on_interrupt: Optional[Callable[[], None]] = None) -> Any:
        """Wait for the job; Ctrl-C calls ``on_interrupt`` (e.g. cancel), still waits for C to return, then
        re-raises KeyboardInterrupt. A ``timeout`` calls ``on_timeout`` once and keeps waiting for the end."""
        deadline = None if timeout is None else time.monotonic() + timeout
        timed_out = False
        try:
            while not self.event.wait(0.05 if deadline is None else max(min(deadline - time.monotonic(), 0.05), 0.0)):
                if deadline is not None and not timed_out and time.monotonic() >= deadline:
                    timed_out = True
                    if on_timeout is not None:
                        on_timeout()
        except KeyboardInterrupt:
            if on_interrupt is not None:
                on_interrupt()
            self.wait_uninterrupted()
            raise
        return self.result()

    def wait_uninterrupted(self) -> bool:
        """Block until the job ends, even through Ctrl-C presses; True if one arrived (the caller re-raises
        KeyboardInterrupt once it has cleaned up, so the interrupt is never lost)."""
        interrupted = False
        while True:
            try:
                if self.event.wait(0.05):
                    return interrupted
            except KeyboardInterrupt:
                interrupted = True


_STOP = object()


class OwnerThread:
    """A dedicated daemon thread that runs submitted jobs one at a time, in submission order."""

    def __init__(self, name: str) -> None:
        self._queue: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._ready = threading.Event()
        self.native_id: Optional[int] = None
        self.ident: Optional[int] = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        # Ctrl-C belongs to the main thread: blocking SIGINT here (and so in every thread the library starts
        # from here, e.g. OpenVINO's workers) makes the kernel deliver it where it can interrupt input() or a wait.
        if hasattr(signal, "pthread_sigmask"):
            try:
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            except (OSError, ValueError):
                pass
        self.native_id = threading.get_native_id()
        self.ident = threading.get_ident()
        self._ready.set()
        while True:
            job = self._queue.get()
            if job is _STOP:
                return
            job.run()
            del job

    def is_current(self) -> bool:
        """True when called from this owner thread (e.g. from inside a streamer callback)."""
        return threading.get_ident() == self.ident

    def submit(self, fn: Callable[[], Any]) -> Job:
        if self._stopping or not self._thread.is_alive():
            raise RuntimeError("owner thread is stopping or gone")
        job = Job(fn)
        self._queue.put(job)
        return job

    def stop(self) -> None:
        """Let the thread end after the jobs already queued (does not wait)."""
        if not self._stopping:
            self._stopping = True
            self._queue.put(_STOP)

    def join(self, timeout: Optional[float] = None) -> bool:
        if self.is_current():
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()
