"""The relay helper (cdefs/94_ovgenai_relay.h, ``libovgenai_c_relay.so`` beside the bundled backend): one C call at
a time handed from a caller's thread to a pipeline's owner thread and back without the interpreter lock on either
hand-off. The owner thread waits inside the relay's ``serve`` (GIL released) and runs a posted call there; its
Python jobs make ``serve`` return. A plain ``generate()`` goes this way (:mod:`ovgenai_c.pipeline`); everything
else is a Python job as before. The helper links nothing of OpenVINO or GenAI, so it serves the official library as
well as the bundled one. Without it (not built, or ``OVGENAI_C_RELAY=0``) every call is a Python job.
"""
from __future__ import annotations

import math
import os
import struct
import threading
from typing import Any, Optional, Tuple, Union

from . import _ffi

RELAY_NAME = "libovgenai_c_relay.so"
DEFAULT_SPIN_US = (1000, 100)  # (owner, caller): see cdefs/94_ovgenai_relay.h, ovgenai_relay_set_spin
NOT_READ = 2 ** (8 * struct.calcsize("N")) - 1  # post_read's size when the owner did not read the text, (size_t)-1
_UNCOLLECTED = -0x7FFFFFFF  # the status cell's value while the posted call is not collected (never a C status)

_lock = threading.Lock()
_lib: Any = None
_looked = False


def _find() -> Optional[str]:
    from . import _loader  # (the bundled backend's folders: the relay is built and shipped beside it)

    for candidate in _loader.bundled_candidates():
        path = candidate.with_name(RELAY_NAME)
        if path.is_file():
            return str(path)
    return None


def library() -> Any:
    """The opened relay library, or None (not found, failed to load, or switched off by ``OVGENAI_C_RELAY=0``)."""
    global _lib, _looked
    if _looked:
        return _lib
    with _lock:
        if not _looked:
            if os.environ.get("OVGENAI_C_RELAY", "1").strip().lower() not in ("0", "false", "no", "off"):
                path = _find()
                if path is not None:
                    try:
                        _lib = _ffi.get_ffi().dlopen(path)
                    except OSError:
                        _lib = None
            _looked = True
    return _lib


class Relay:
    """One owner thread's relay: the owner side (:meth:`serve`, :meth:`wake`) and one call slot for callers."""

    __slots__ = ("_lib", "ffi", "ptr", "_error", "__weakref__")

    def __init__(self, lib: Any) -> None:
        ffi = _ffi.get_ffi()
        out = ffi.new("ovgenai_relay**")
        if lib.ovgenai_relay_create(out) != 0:
            raise MemoryError("ovgenai_relay_create failed")
        self._lib = lib
        self.ffi = ffi
        # freed once nothing references it: the owner's loop and every call in flight hold this object
        self.ptr = ffi.gc(out[0], lib.ovgenai_relay_free)
        self._error = ffi.new("char[]", 4096)

    def set_error_source(self, fn: Any) -> None:
        """Where a failed call's text comes from (read on the owner right after the call; NULL: nowhere)."""
        self._lib.ovgenai_relay_set_error_source(self.ptr, fn)

    # --- owner side ---------------------------------------------------------------------------------------------
    def serve(self) -> int:
        """Block (GIL released) running posted calls until woken."""
        return self._lib.ovgenai_relay_serve(self.ptr)

    def wake(self) -> None:
        self._lib.ovgenai_relay_wake(self.ptr)

    # --- caller side --------------------------------------------------------------------------------------------
    def reserve(self) -> bool:
        return bool(self._lib.ovgenai_relay_reserve(self.ptr))

    def unreserve(self) -> None:
        self._lib.ovgenai_relay_unreserve(self.ptr)

    def post(self, fn: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any) -> None:
        self._lib.ovgenai_relay_post(self.ptr, fn, a0, a1, a2, a3, a4)

    def post_read(self, fn: Any, a0: Any, a1: Any, a2: Any, a3: Any, a4: Any, reader: Any, buf: Any,
                  size: Any) -> None:
        """:meth:`post`, and the owner reads the results' text (``reader(*a4, buf, size)``) right after the call:
        ``size[0]`` is then the text's size with its NUL, or :data:`NOT_READ`."""
        self._lib.ovgenai_relay_post_read(self.ptr, fn, a0, a1, a2, a3, a4, reader, buf, size)

    def status_cell(self) -> Any:
        """A posted call's own status cell for :meth:`wait` (C writes the status there before the wait returns: a
        wait whose return an interrupt cut off still leaves it behind)."""
        types = self.ffi.call_types
        cell = types.new(types.int_ptr)
        cell[0] = _UNCOLLECTED
        return cell

    def wait(self, timeout: Optional[float], cell: Any) -> Optional[Tuple[int, Optional[str]]]:
        """(status, the library's text for a failure or None) of the posted call once it has ended (within
        ``timeout`` seconds; None: no limit), else None. The slot is free again when this returns a value.
        ``cell``: the call's :meth:`status_cell`."""
        if cell[0] != _UNCOLLECTED:
            return self._collected_before(cell)
        return self._ended(self._lib.ovgenai_relay_wait(self.ptr, _ms(timeout), cell), cell)

    def wait_fd(self, timeout: Optional[float], cell: Any, read_fd: int, write_fd: int,
                forward_fd: int) -> Union[None, bool, Tuple[int, Optional[str]]]:
        """:meth:`wait` for Python's main thread while ``write_fd`` is its signal wakeup fd (a non-blocking pipe's
        write end; ``read_fd`` the read end): also False as soon as a signal's number arrives (passed on to
        ``forward_fd`` unless -1; the handler runs when this returns)."""
        if cell[0] != _UNCOLLECTED:
            return self._collected_before(cell)
        ended = self._lib.ovgenai_relay_wait_fd(self.ptr, _ms(timeout), cell, read_fd, write_fd, forward_fd)
        return False if ended < 0 else self._ended(ended, cell)

    def _ended(self, ended: int, cell: Any) -> Optional[Tuple[int, Optional[str]]]:
        if not ended:
            return None
        return int(cell[0]), self._take_error() if ended == 2 else None

    def _collected_before(self, cell: Any) -> Tuple[int, Optional[str]]:
        """The outcome of a call an earlier wait collected but whose return an interrupt cut off. A failure with a
        text keeps the slot until its text is taken (nothing else can have been posted since): take it. (A failure
        without a text freed the slot; should another thread's call have ended in it meanwhile, its text would be
        taken here — an interrupt in that instant and that race together.)"""
        text = self._take_error() if cell[0] != 0 and self._lib.ovgenai_relay_done(self.ptr) else None
        return int(cell[0]), text

    def _take_error(self) -> Optional[str]:
        """The failed call's text (ovgenai_relay_take_error, which frees the slot), or None when it is empty."""
        self._lib.ovgenai_relay_take_error(self.ptr, self._error, 4096)
        return self.ffi.string(self._error).decode("utf-8", "replace") or None

    def done(self) -> bool:
        return bool(self._lib.ovgenai_relay_done(self.ptr))

    def last_call_times(self) -> Optional[Tuple[int, int]]:
        """(start, end) of the last call that ran on the owner, in ``time.monotonic_ns`` nanoseconds on Linux (the
        steady clock), or None before the first."""
        times = self.ffi.new("long long[2]")
        if not self._lib.ovgenai_relay_last_call_times(self.ptr, times, times + 1):
            return None
        return int(times[0]), int(times[1])


def _ms(timeout: Optional[float]) -> int:
    """A wait's timeout in whole milliseconds for C, rounded up (-1: none)."""
    return -1 if timeout is None else max(int(math.ceil(timeout * 1000.0)), 0)


def new_relay(error_source: Any = None) -> Optional[Relay]:
    """A relay for a new owner thread (``error_source``: see :meth:`Relay.set_error_source`), or None when the
    helper is not available."""
    lib = library()
    if lib is None:
        return None
    try:
        relay = Relay(lib)
    except MemoryError:
        return None
    if error_source is not None:
        relay.set_error_source(error_source)
    owner_us, caller_us = spin_settings()
    lib.ovgenai_relay_set_spin(relay.ptr, owner_us, caller_us)
    return relay


def spin_settings() -> Tuple[int, int]:
    """(owner, caller) spin in microseconds: ``OVGENAI_C_RELAY_SPIN="OWNER,CALLER"`` (one number: both), else
    :data:`DEFAULT_SPIN_US`."""
    raw = os.environ.get("OVGENAI_C_RELAY_SPIN", "").strip()
    if not raw:
        return DEFAULT_SPIN_US
    try:
        parts = [max(int(p), 0) for p in raw.split(",")]
    except ValueError:
        return DEFAULT_SPIN_US
    return (parts[0], parts[-1]) if len(parts) in (1, 2) else DEFAULT_SPIN_US
