"""The checked call: every C call of the GenAI library goes through :class:`CApi`, which knows each function's
status family from its declared return type and attaches the library's own error text to a failure."""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional, Tuple

from .. import _ffi, errors

# the status enums of the GenAI C API (cdefs/00, 01, 02): a function returning one of them is checked with its names
STATUS_ENUMS = ("ov_status_e", "ov_genai_chat_history_status_e", "ov_genai_json_container_status_e")


class CApi:
    """Checked calls into one loaded GenAI library (a :class:`~ovgenai_c._loader.LoadedLibrary`)."""

    def __init__(self, loaded: Any) -> None:
        self.loaded = loaded
        self.ffi = loaded.ffi
        self._enums: Dict[str, str] = {}
        self._relay_fns: Dict[str, Any] = {}

    @property
    def lib(self) -> Any:
        """The cffi library (read from the loaded library each time, so a wrapper set on it is honoured)."""
        return self.loaded.lib

    def has(self, extra: str) -> bool:
        """Whether the library exports the optional function ``extra`` (cdefs/9*: the bundled extras; cdefs/06: the
        VLM functions)."""
        return self.loaded.has_extra(extra)

    def relay_fn(self, function: str, shape: str = "ovgenai_relay_fn") -> Any:
        """The C function ``function`` as a pointer of the relay's ``shape`` (``ovgenai_relay_fn``, a call: five
        pointers in, a status out; ``ovgenai_relay_reader_fn``, a two-call string getter), or None when the library's
        attribute is not a C function (a wrapper set on it)."""
        fn = getattr(self.loaded.lib, function)
        known = self._relay_fns.get(function)
        if known is not None and known[0] is fn:
            return known[1]
        if not isinstance(fn, self.ffi.CData):
            return None
        cast = self.ffi.cast(shape, fn)
        self._relay_fns[function] = (fn, cast)
        return cast

    def status_enum(self, function: str) -> str:
        """The status family of ``function``: its declared return type (``ov_status_e`` for a name that is not a
        declared function). A declared function that returns no status cannot be checked (TypeError)."""
        enum = self._enums.get(function)
        if enum is None:
            try:
                cname = self.ffi.typeof(getattr(self.loaded.lib, function)).result.cname
            except (TypeError, *_ffi.missing_symbol_errors()):
                cname = None  # not a declared function (or a wrapper): the common family
            if cname is not None and cname not in STATUS_ENUMS:
                raise TypeError(f"{function} returns {cname}, not a status")
            enum = self._enums[function] = cname or errors.STATUS_ENUM
        return enum

    def call(self, function: str, *args: Any, hint: Optional[str] = None) -> None:
        """Call ``function(*args)`` and raise the typed error for a failing status."""
        status = getattr(self.loaded.lib, function)(*args)
        if status != 0:
            raise self.error(status, function, hint)

    def check(self, status: int, function: str, hint: Optional[str] = None) -> None:
        """Raise the typed error for ``status`` of a call to ``function`` made by the caller, unless it is OK."""
        if status != 0:
            raise self.error(status, function, hint)

    def error(self, status: int, function: str, hint: Optional[str] = None,
              detail: Optional[str] = None) -> errors.GenAIError:
        """The exception for a failing status of ``function``, with the library's own text when it keeps one
        (``detail``: that text, read already on the thread that made the call; else read on this thread)."""
        from . import bundled

        text = (lambda: detail) if detail is not None else (lambda: bundled.last_error(self))
        return errors.error_for(status, function, self.status_enum(function), hint, text)

    def relay_error_source(self) -> Any:
        """The library's last-error function as the relay's error source (``ovgenai_relay_error_fn``), or NULL."""
        from . import bundled

        if not self.has(bundled.LAST_ERROR):
            return self.ffi.NULL
        return self.ffi.cast("ovgenai_relay_error_fn", self.lib.ovgenai_c_bundled_last_error)


_bound: Dict[int, Tuple[CApi, Any]] = {}
_bound_lock = threading.Lock()


def bind(loaded: Any) -> CApi:
    """The :class:`CApi` of a loaded library (one per library, kept with it)."""
    entry = _bound.get(id(loaded))
    if entry is None or entry[1] is not loaded:
        with _bound_lock:
            entry = _bound.get(id(loaded))
            if entry is None or entry[1] is not loaded:
                entry = _bound[id(loaded)] = (CApi(loaded), loaded)
    return entry[0]


_callbacks: Dict[Tuple[str, int], Tuple[Any, Any]] = {}
_callbacks_lock = threading.Lock()


STREAMING_CANCEL = 2  # ov_genai_streaming_status_e CANCEL


def cancel_on_error(exc_type: Any, exc_value: Any, tb: Any) -> int:
    """cffi's ``onerror`` for every streaming callback: CANCEL, as nothing may cross into C."""
    return STREAMING_CANCEL


def per_ffi_callback(kind: str, ffi: Any, make: Callable[[], Any]) -> Any:
    """One cffi callback of ``kind`` per FFI, made once and kept alive with it (C may call it at any time)."""
    with _callbacks_lock:
        entry = _callbacks.get((kind, id(ffi)))
        if entry is None:
            entry = _callbacks[(kind, id(ffi))] = (make(), ffi)
    return entry[0]
