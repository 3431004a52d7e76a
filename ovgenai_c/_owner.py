"""The owner thread: one native thread per pipeline that runs every C call on it, in order.

Callers submit jobs and block until they end (no polling) while Ctrl-C stays live; while C runs the GIL is
released (cffi drops it around calls).
"""
from __future__ import annotations

import _thread
import collections
import os
import queue
import select
import signal
import sys
import threading
import time
from typing import Any, Callable, List, Optional, Tuple

from . import _interpreter, _relay

try:  # CPython's raw handler lookup: signal.getsignal wraps it and turns ints into enums (~100x slower, and colder)
    from _signal import getsignal as _raw_getsignal
except ImportError:  # pragma: no cover - other interpreters
    _raw_getsignal = signal.getsignal


PLAIN_WAIT_S = 0.01  # the main thread's first, plain wait (the longest a Ctrl-C can go unseen)
# How long the main thread's signal-aware wait blocks at a time. CPython's _thread.interrupt_main() writes to the
# signal wakeup fd as a real signal does, so the wait needs no slices (None); PyPy's only flags the interrupt for
# the next bytecode, so there the wait comes back to Python this often to let it run.
INTERRUPT_POLL_S: Optional[float] = None if _interpreter.REFCOUNTED else 0.05


class Latch:
    """A one-shot flag (``threading.Event``'s set/is_set/wait without clear) over one plain lock: setting it is
    one lock release, waiting one acquire — no condition variable, no per-wait lock allocation."""

    __slots__ = ("_lock", "_set")

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._lock.acquire()  # held until set
        self._set = False

    def set(self) -> None:
        if not self._set:
            self._set = True
            try:
                self._lock.release()
            except RuntimeError:  # a concurrent set() released it first
                pass

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: Optional[float] = None) -> bool:
        """True once set; False when ``timeout`` seconds passed first."""
        if self._set:
            return True
        if self._lock.acquire(True, -1 if timeout is None else timeout):
            self._lock.release()  # the next waiter (if any) gets through too
            return True
        return self._set


class Wakeup:
    """A flag a thread blocks on until another sets it (``threading.Event``'s interface), without polling.

    On the main thread a Python signal handler (Ctrl-C's KeyboardInterrupt) still runs during the wait: a signal
    normally interrupts a blocking wait only when the kernel delivers it to the main thread itself, and
    ``_thread.interrupt_main()`` or a signal taken by another thread would wait for the flag. There the wait
    first blocks plainly for :data:`PLAIN_WAIT_S` (most calls end within it), then selects on a pipe that both
    :meth:`set` and Python's signal wakeup fd write to (the previous wakeup fd is restored afterwards and receives
    the signal numbers read meanwhile)."""

    __slots__ = ("_event", "_fd")

    def __init__(self, once: bool = False) -> None:
        # once: set a single time and never cleared (a job's end) — a Latch, cheaper than an Event
        self._event: Any = Latch() if once else threading.Event()
        self._fd: Optional[int] = None  # write end of the pipe while the main thread waits

    def set(self) -> None:
        event = self._event
        if type(event) is Latch:
            # the flag first, then the pipe's write end: a main thread that publishes its pipe after this read
            # sees the flag before it selects; the release (which wakes a plain waiter) comes last but one
            if event._set:
                return  # set once only (a second release could undo a waiter's own hold of the lock)
            event._set = True
            fd = self._fd
            try:
                event._lock.release()
            except RuntimeError:  # set twice (or concurrently): released already
                pass
        else:
            event.set()
            fd = self._fd
        if fd is not None:
            try:
                os.write(fd, b"\0")
            except OSError:  # full (a wake-up is pending anyway) or closed
                pass

    def clear(self) -> None:
        self._event.clear()  # (not on a one-shot Wakeup)

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """True once set; False when ``timeout`` seconds passed first."""
        return staged_wait(self._event.wait, self._main_thread_wait, timeout)

    def _main_thread_wait(self, timeout: Optional[float]) -> bool:
        return wait_on_main_thread(self._event.is_set, self._arm, self._event.wait, timeout)

    def _arm(self, w: Optional[int]) -> bool:
        self._fd = w
        return self._event.is_set()


# Interpreter exit: from the start of the exit hook (which cancels the calls in flight and closes every pipeline), a
# daemon thread (not an owner) coming back from a wait of this module, or starting a call on a pipeline the hook
# closed, stays parked in C until the process ends, as the interpreter is about to freeze it anyway. Otherwise it
# runs on into the teardown: on CPython a worker looping over generate() prints a PipelineClosedError traceback
# into the exit; on PyPy, whose daemon threads go on running Python while the process tears down, one still
# unwinding its call crashes the interpreter inside exit() (SIGSEGV in 3 of 20 runs of tests/reliability's
# daemon-thread shutdown case).
_park_daemons = False
_owner_idents: set = set()


def park_daemon_waiters() -> None:
    """Called by the exit hook: from now on a daemon thread's wait or call never returns to Python."""
    global _park_daemons
    _park_daemons = True


def park_if_exiting() -> None:
    """On a daemon thread once the exit hook has run: block in C for good. Elsewhere and before: nothing."""
    if _park_daemons:
        _park_if_exiting()


def _park_if_exiting() -> None:  # (the callers check _park_daemons first: a call less on every wait)
    me = threading.current_thread()
    if me.daemon and threading.get_ident() not in _owner_idents:
        lock = _thread.allocate_lock()
        lock.acquire()
        while True:
            lock.acquire()  # never released: blocked in C, running no Python, until the process ends


def staged_wait(plain_wait: Callable[[Optional[float]], bool], main_wait: Callable[[Optional[float]], bool],
                timeout: Optional[float]) -> bool:
    """Wait until the awaited end (True) or ``timeout`` seconds (False): first ``plain_wait`` for at most
    :data:`PLAIN_WAIT_S` — a short call ends within it (on the main thread Ctrl-C is seen when it returns) —, then
    off the main thread (or without a Python SIGINT handler) ``plain_wait`` again, on it ``main_wait``, a wait that
    a signal interrupts at once."""
    first = PLAIN_WAIT_S if timeout is None or timeout > PLAIN_WAIT_S else timeout
    ended = plain_wait(first)
    left = None if timeout is None else timeout - first
    if not ended and (left is None or left > 0):
        if threading.current_thread() is threading.main_thread() and _python_sigint_handler():
            return main_wait(left)
        ended = plain_wait(left)
    if _park_daemons:  # (any wait of a daemon thread, however short, once the exit hook has run)
        _park_if_exiting()
    return ended


def wait_on_main_thread(is_set: Callable[[], bool], arm: Callable[[Optional[int]], bool],
                        plain_wait: Callable[[Optional[float]], bool], timeout: Optional[float]) -> bool:
    """The main thread's signal-aware wait: until ``is_set()`` (True) or ``timeout`` seconds (False), selecting on a
    pipe that Python's signal wakeup fd writes to — a Ctrl-C taken by any thread runs its handler here at once.
    ``arm(w)`` makes the awaited end write a byte to ``w`` too and says whether it has happened already; ``arm(None)``
    disarms it (always called last). ``plain_wait(timeout)``: the wait where no wakeup fd can be set."""
    r, w = _main_pipe()
    try:
        try:
            previous = _install_wakeup_fd(w)
        except ValueError:  # not the main interpreter's main thread after all
            return plain_wait(timeout)
        with _SwallowedInterrupts():
            if arm(w):
                return True
            deadline = None if timeout is None else time.monotonic() + timeout
            while not is_set():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                # a signal delivered to this thread interrupts select and its handler runs here (PEP 475); one
                # taken elsewhere (or interrupt_main) writes its number to the pipe, and the handler runs at the
                # next bytecode
                select.select([r], [], [], _poll_slice(left))
                _drain(r, previous)
                _raise_swallowed_interrupt()
            return True
    finally:
        # first: a Ctrl-C arriving in this block must not leave our pipe installed
        _restore_wakeup_fd(w)
        arm(None)


# A Ctrl-C whose handler runs inside a finalizer or a weakref callback on the main thread (a collection runs them in
# the middle of any Python code; on PyPy one in the wait's own loop) is raised there and swallowed: Python hands it
# to sys.unraisablehook ("Exception ignored in ...") and the wait would go on. While the main thread waits here,
# our hook takes such a KeyboardInterrupt and the wait raises it; everything else goes to the hook below ours.
_swallowed_interrupt = False
_waits_catching = 0  # main-thread waits in progress (a finalizer may wait too)
_below: Any = None  # the hook ours replaced
_left_under_another = False  # a hook installed over ours during a wait: ours stays under it, passing all down


def _on_unraisable(unraisable: Any) -> None:
    global _swallowed_interrupt
    if _waits_catching and isinstance(unraisable.exc_value, KeyboardInterrupt) \
            and threading.current_thread() is threading.main_thread():
        _swallowed_interrupt = True
        return
    (_below or sys.__unraisablehook__)(unraisable)


def _raise_swallowed_interrupt() -> None:
    """Raise the KeyboardInterrupt our hook took from a finalizer, if any."""
    global _swallowed_interrupt
    if _swallowed_interrupt:
        _swallowed_interrupt = False
        raise KeyboardInterrupt


class _SwallowedInterrupts:
    """The span of a main-thread wait: our hook goes on top at the start (unless one installed over it is still
    there), and at the end the last wait puts the hook below ours back, if ours is still on top, and raises what
    ours took meanwhile (also one a finalizer took as the wait ended)."""

    __slots__ = ()

    def __enter__(self) -> None:
        global _waits_catching, _below
        current = sys.unraisablehook
        if current is not _on_unraisable and not _left_under_another:
            _below = current
            sys.unraisablehook = _on_unraisable
        _waits_catching += 1

    def __exit__(self, *exc: Any) -> None:
        global _waits_catching, _left_under_another
        _waits_catching -= 1
        if not _waits_catching:
            if sys.unraisablehook is _on_unraisable:
                sys.unraisablehook = _below
                _left_under_another = False
            else:
                _left_under_another = True
        _raise_swallowed_interrupt()


def catching_swallowed_interrupts() -> _SwallowedInterrupts:
    """A main-thread span (a wait, or a collection) during which a KeyboardInterrupt that a finalizer or weakref
    callback swallowed is taken by our hook and raised when the span ends."""
    return _SwallowedInterrupts()


# The wakeup fd that was set before a wait installed its pipe's write end (restored when the wait ends). Kept here,
# not in a local: a KeyboardInterrupt can arrive between set_wakeup_fd() returning and the local being assigned.
_outer_wakeup_fd = -1


def _poll_slice(left: Optional[float]) -> Optional[float]:
    """The main thread's next blocking wait: ``left`` seconds (None: no limit), cut to :data:`INTERRUPT_POLL_S`."""
    if INTERRUPT_POLL_S is None or (left is not None and left <= INTERRUPT_POLL_S):
        return left
    return INTERRUPT_POLL_S


def _install_wakeup_fd(w: int) -> int:
    """Install ``w`` as Python's signal wakeup fd; returns the fd it replaced (never ``w`` itself: one left installed
    by an interrupted earlier wait is not an outer fd to forward signal numbers to)."""
    global _outer_wakeup_fd
    previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    if previous != w:
        _outer_wakeup_fd = previous
    return _outer_wakeup_fd


def _restore_wakeup_fd(w: int) -> None:
    """Put the outer wakeup fd back if ``w`` is installed (and nothing if it is not: the wait ended before it
    installed it, or someone else set their own since)."""
    try:
        current = signal.set_wakeup_fd(_outer_wakeup_fd)
        if current != w:
            signal.set_wakeup_fd(current)
    except ValueError:  # not the main thread
        pass


_pipe_fds: Optional[Tuple[int, int]] = None


def _main_pipe() -> Tuple[int, int]:
    """The main thread's wake-up pipe (made once, non-blocking, not inherited)."""
    global _pipe_fds
    if _pipe_fds is None:
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        _pipe_fds = (r, w)
    return _pipe_fds


def _new_pipe_after_fork() -> None:
    """A forked child gets its own pipe (sharing the parent's would let either read the other's wake-ups)."""
    global _pipe_fds
    if _pipe_fds is not None:
        for fd in _pipe_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        _pipe_fds = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_pipe_after_fork)


def _drain(r: int, previous: int) -> None:
    """Empty the pipe; signal numbers (non-zero bytes) go on to the wakeup fd that was set before ours. A short read
    has emptied it: no second read to end on BlockingIOError (an exception costs tens of µs with cold caches)."""
    while True:
        try:
            data = os.read(r, 512)
        except (BlockingIOError, InterruptedError):
            return
        if not data:
            return
        if previous != -1:  # (never our own pipe: _install_wakeup_fd)
            signals = data.replace(b"\0", b"")
            if signals:
                try:
                    os.write(previous, signals)
                except OSError:
                    pass
        if len(data) < 512:
            return


def _python_sigint_handler() -> bool:
    """Whether Ctrl-C runs a Python handler (else nothing can interrupt the wait and it simply blocks)."""
    handler = _raw_getsignal(signal.SIGINT)
    return callable(handler)




_done_lock = _thread.allocate_lock()  # a job's end against add_done_callback (every job's: rarely contended)


class _Waitable:
    """What a caller does with a submitted job (``event``, ``value``, ``error`` are the subclass's)."""

    __slots__ = ()
    event: Any
    value: Any
    error: Optional[BaseException]

    def result(self) -> Any:
        if self.error is not None:
            err, self.error = self.error, None
            try:
                raise err
            finally:
                del err
        return self.value

    def wait(self, on_interrupt: Optional[Callable[[], None]] = None) -> Any:
        """Wait for the job and return its value (or raise its exception). Ctrl-C calls ``on_interrupt`` (e.g.
        cancel), still waits for C to return, then re-raises KeyboardInterrupt."""
        try:
            self.event.wait()
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
                self.event.wait()
                return interrupted
            except KeyboardInterrupt:
                interrupted = True


class Job(_Waitable):
    """A call queued to an owner thread; :meth:`wait` returns its value or raises its exception."""

    __slots__ = ("fn", "event", "value", "error", "_callbacks", "_finished", "started")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.event = Wakeup(once=True)
        self.value: Any = None
        self.error: Optional[BaseException] = None
        self._callbacks: Optional[List[Callable[["Job"], None]]] = None
        self._finished = False
        self.started = False

    def run(self) -> None:
        """Run the job on the owner thread. Its end is published first (:meth:`done`, the done callbacks), and the
        waiter is woken last: the owner then goes straight back to its queue, so a woken caller seldom finds the
        GIL still held by it."""
        self.started = True
        try:
            self.value = self.fn()
        except BaseException as exc:  # handed to the waiting caller
            self.error = exc
        self.fn = None  # drop references held by the closure
        with _done_lock:
            self._finished = True
            callbacks, self._callbacks = self._callbacks, None
        if callbacks:
            for cb in callbacks:
                try:
                    cb(self)
                except Exception:
                    pass
        self.event.set()

    def add_done_callback(self, cb: Callable[["Job"], None]) -> None:
        """Call ``cb(job)`` when the job ends (at once, on this thread, if it already has)."""
        with _done_lock:
            if not self._finished:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(cb)
                return
        cb(self)

    def done(self) -> bool:
        """Whether the job has ended (its value or error is set; its waiter may not have been woken yet)."""
        return self._finished


class RelayJob(_Waitable):
    """A C call posted to an owner thread through its relay (:mod:`._relay`), waited for like a :class:`Job` (its
    ``event``). The first wait that sees the call's end runs ``conclude(status, text)`` on the waiting thread (not
    the owner's; ``text``: the library's own text for a failure, read on the owner): its value, or the exception it
    raised, is the job's. One thread waits on it (the caller that posted it)."""

    __slots__ = ("relay", "_conclude", "value", "error", "_finished", "_lock", "_cell")

    def __init__(self, relay: Any, conclude: Callable[[int, Optional[str]], Any]) -> None:
        self.relay = relay
        self._conclude: Optional[Callable[[int, Optional[str]], Any]] = conclude
        self.value: Any = None
        self.error: Optional[BaseException] = None
        self._finished = False
        self._lock = _thread.allocate_lock()
        self._cell = relay.status_cell()

    @property
    def event(self) -> "_RelayEvent":
        return _RelayEvent(self)

    def done(self) -> bool:
        """Whether C has returned (the call's outcome may not be collected yet)."""
        return self._finished or self.relay.done()

    def _collect(self, timeout: Optional[float]) -> bool:
        """Wait up to ``timeout`` seconds in C (GIL released) for the call's end, then conclude it (once)."""
        with self._lock:
            if self._finished:
                return True
            ended = self.relay.wait(timeout, self._cell)
            if _park_daemons:
                _park_if_exiting()
            if ended is None:
                return False
            self._finish(ended)
            return True

    def _collect_on_main_thread(self, timeout: Optional[float]) -> bool:
        """:meth:`_collect` for the main thread: the wait also ends when a signal arrives (Python's signal wakeup fd
        writes to the pipe it watches), and its handler (Ctrl-C's KeyboardInterrupt) runs here at once."""
        r, w = _main_pipe()
        with self._lock:
            if self._finished:
                return True
            try:
                previous = _install_wakeup_fd(w)
            except ValueError:  # not the main interpreter's main thread after all
                ended = self.relay.wait(timeout, self._cell)
            else:
                try:
                    with _SwallowedInterrupts():
                        deadline = None if timeout is None else time.monotonic() + timeout
                        while True:
                            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                            ended = self.relay.wait_fd(_poll_slice(left), self._cell, r, w, previous)
                            _raise_swallowed_interrupt()
                            if ended is not False and (ended is not None or left == _poll_slice(left)):
                                break  # (False: a signal; None within a poll slice: round again; handlers run there)
                finally:
                    _restore_wakeup_fd(w)
            if ended is None:
                return False
            self._finish(ended)
            return True

    def _finish(self, ended: Tuple[int, Optional[str]]) -> None:
        conclude, self._conclude = self._conclude, None
        try:
            self.value = conclude(*ended)  # type: ignore[misc]  # (status, the library's failure text)
        except BaseException as exc:  # handed to the caller as a Job's error is
            self.error = exc
        self._finished = True


class _RelayEvent:
    """A :class:`RelayJob`'s end as a :class:`Wakeup`'s interface (``wait`` / ``is_set``)."""

    __slots__ = ("_job",)

    def __init__(self, job: RelayJob) -> None:
        self._job = job

    def is_set(self) -> bool:
        return self._job._finished

    def wait(self, timeout: Optional[float] = None) -> bool:
        """True once the call has ended and is concluded; False when ``timeout`` seconds passed first."""
        job = self._job
        return job._finished or staged_wait(job._collect, job._collect_on_main_thread, timeout)


_STOP = object()


class _FinalizerSafeQueue:
    """``queue.SimpleQueue``'s put / get / get_nowait, for interpreters without its C version (PyPy): the Python
    fallback's put() takes the Condition its get() holds, and a finalizer that runs while the owner is inside get()
    (PyPy runs them on whichever thread is executing) deadlocked the owner on its own lock. Here put() is a deque
    append and the release of a plain lock that stands for "look again": nothing a finalizer can wait on."""

    __slots__ = ("_items", "_look")

    def __init__(self) -> None:
        self._items: "collections.deque[Any]" = collections.deque()
        self._look = _thread.allocate_lock()
        self._look.acquire()  # locked while nothing new was put; each put() unlocks it, the (one) getter waits on it

    def put(self, item: Any) -> None:
        self._items.append(item)
        try:
            self._look.release()
        except RuntimeError:  # released already: the getter has a look pending
            pass

    def get_nowait(self) -> Any:
        try:
            return self._items.popleft()
        except IndexError:
            raise queue.Empty from None

    def get(self) -> Any:
        while True:
            try:
                return self._items.popleft()
            except IndexError:
                self._look.acquire()


try:  # CPython's SimpleQueue is C, and its put() is documented as safe in finalizers
    from _queue import SimpleQueue as _JobQueue
except ImportError:  # pragma: no cover - other interpreters
    _JobQueue = _FinalizerSafeQueue  # type: ignore[misc,assignment]


class OwnerThread:
    """A dedicated daemon thread that runs submitted jobs one at a time, in submission order."""

    def __init__(self, name: str, relay: bool = False, relay_error_source: Any = None) -> None:
        # relay: C calls can also reach this thread through a relay (RelayJob), when the helper library is there;
        # relay_error_source: the library's last-error function (its text is this thread's)
        self.relay = _relay.new_relay(relay_error_source) if relay else None
        self._queue: Any = _JobQueue()  # (put() from a finalizer must be safe: see _FinalizerSafeQueue)
        self._ready = threading.Event()
        self.native_id: Optional[int] = None
        self.ident: Optional[int] = None
        self._stopping = False
        self._gone = False  # set when the thread's loop has ended (cheaper to read than Thread.is_alive())
        self._join_lock = _thread.allocate_lock()
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
        _owner_idents.add(self.ident)
        self._ready.set()
        get = self._queue.get
        relay = self.relay
        try:
            if relay is not None:
                get_nowait, empty, serve = self._queue.get_nowait, queue.Empty, relay.serve
                while True:
                    try:
                        job = get_nowait()
                    except empty:
                        # nothing queued: wait in the relay (GIL released), running the C calls posted to it, until
                        # a put() wakes it (a flag: a wake-up given before serve starts is not lost)
                        if serve() < 0:
                            break  # the relay failed (its mutex): plain queue waits from now on
                        continue
                    if job is _STOP:
                        return
                    job.run()
                    del job
            while True:
                job = get()
                if job is _STOP:
                    return
                job.run()  # wakes its waiter last: nothing but this loop runs between that and the next get()
                del job
        finally:
            self._gone = True
            _owner_idents.discard(self.ident)

    def is_current(self) -> bool:
        """True when called from this owner thread (e.g. from inside a streamer callback)."""
        return threading.get_ident() == self.ident

    def submit(self, fn: Callable[[], Any]) -> Job:
        job = Job(fn)
        self.put(job)
        return job

    def put(self, job: Job) -> None:
        """Queue a job made by the caller (its waiter should block right after: see :meth:`Job.run`)."""
        if self._stopping or self._gone:
            raise RuntimeError("owner thread is stopping or gone")
        self._queue.put(job)
        if self.relay is not None:
            self.relay.wake()

    def stop(self) -> None:
        """Let the thread end after the jobs already queued (does not wait)."""
        if not self._stopping:
            self._stopping = True
            self._queue.put(_STOP)
            if self.relay is not None:
                self.relay.wake()

    def join(self, timeout: Optional[float] = None) -> bool:
        if self.is_current():
            return False
        # one joiner at a time: concurrent Thread.join() calls on one thread race inside the threading module of
        # some interpreters (PyPy 3.9's raised AssertionError / "cannot release un-acquired lock" when 8 threads
        # closed one pipeline at once; CPython's bpo-45274)
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._join_lock.acquire(True, -1 if timeout is None else timeout):
            return not self._thread.is_alive()
        try:
            self._thread.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        finally:
            self._join_lock.release()
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()
