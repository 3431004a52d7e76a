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
import threading
from typing import Any, Optional, Tuple

from . import _ffi

RELAY_NAME = "libovgenai_c_relay.so"

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

    __slots__ = ("_lib", "ffi", "ptr", "_status", "_error", "__weakref__")

    def __init__(self, lib: Any) -> None:
        ffi = _ffi.get_ffi()
        out = ffi.new("ovgenai_relay**")
        if lib.ovgenai_relay_create(out) != 0:
            raise MemoryError("ovgenai_relay_create failed")
        self._lib = lib
        self.ffi = ffi
        # freed once nothing references it: the owner's loop and every call in flight hold this object
        self.ptr = ffi.gc(out[0], lib.ovgenai_relay_free)
        self._status = ffi.new("int*")
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

    def wait(self, timeout: Optional[float]) -> Optional[Tuple[int, Optional[str]]]:
        """(status, the library's text for a failure or None) of the posted call once it has ended (within
        ``timeout`` seconds; None: no limit), else None. The slot is free again when this returns a value."""
        ms = -1 if timeout is None else max(int(math.ceil(timeout * 1000.0)), 0)
        ended = self._lib.ovgenai_relay_wait(self.ptr, ms, self._status)
        if not ended:
            return None
        text = None
        if ended == 2:
            self._lib.ovgenai_relay_take_error(self.ptr, self._error, 4096)
            text = self.ffi.string(self._error).decode("utf-8", "replace") or None
        return int(self._status[0]), text

    def notify(self, fd: int) -> bool:
        """Have the call's end write a byte to ``fd`` (-1: no longer); True when it has ended already."""
        return bool(self._lib.ovgenai_relay_notify(self.ptr, fd))

    def done(self) -> bool:
        return bool(self._lib.ovgenai_relay_done(self.ptr))


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
    return relay

