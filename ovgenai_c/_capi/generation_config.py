"""cdefs/03_generation_config.h: a native config made from a :class:`~ovgenai_c.GenerationConfig`, and the one
value the C ABI reads back."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

from . import bundled
from .checked import CApi

_PREFIX = "ov_genai_generation_config_set_"


def materialise(capi: CApi, config: Any) -> Any:
    """A native config with ``config``'s values: created with the C defaults, then one setter per field that
    differs (in the config's setter order). Freed by ``ffi.gc``; release it once the call that needs it is done."""
    ffi = capi.ffi
    out = ffi.new("ov_genai_generation_config**")
    capi.call("ov_genai_generation_config_create", out)
    handle = ffi.gc(out[0], capi.lib.ov_genai_generation_config_free)
    try:
        for name, value in config.non_default_items():
            fn = _PREFIX + name
            if name == "stop_strings":
                strings = [ffi.new("char[]", s.encode("utf-8")) for s in sorted(value)]
                capi.call(fn, handle, ffi.new("const char*[]", strings), len(strings))
            elif name == "stop_token_ids":
                capi.call(fn, handle, ffi.new("int64_t[]", sorted(value)), len(value))
            elif name == "stop_criteria":
                capi.call(fn, handle, int(value))
            else:
                capi.call(fn, handle, value)
        if not config.apply_chat_template:  # no upstream setter: the bundled extra (the pipeline refuses it elsewhere)
            bundled.set_apply_chat_template(capi, handle, False)
    except BaseException:
        ffi.release(handle)
        raise
    return handle


class NativeConfigCache:
    """The native form of the last config a pipeline generated with, kept while the next call's config has the
    same values (its :meth:`~ovgenai_c.GenerationConfig.fingerprint`), so repeated calls with the same keyword
    arguments materialise nothing. Owned by one pipeline and used on its owner thread only; :meth:`clear` (at
    the latest when the pipeline is freed) frees the native config. At most one native config is live per cache."""

    __slots__ = ("_key", "_handle", "_config")

    def __init__(self) -> None:
        self._key: Any = None
        self._handle: Any = None
        self._config: Any = None  # the config object the cached one was made from

    def get(self, capi: CApi, config: Any) -> Any:
        """The native config for ``config`` (made now unless the cached one has the same values). A config
        without a fingerprint (an unhashable value) is materialised for this call only: the caller releases it
        when :meth:`owns` says the cache does not. The pipeline never changes a config it sends once made (a
        repeated call sends the same object), so the same object is a hit without comparing values."""
        if config is self._config and self._handle is not None:
            return self._handle
        key = config.fingerprint()
        if key is not None and self._handle is not None and key == self._key:
            self._config = config
            return self._handle
        handle = materialise(capi, config)
        if key is None:
            return handle
        self.clear(capi)
        self._key, self._handle, self._config = key, handle, config
        return handle

    def owns(self, handle: Any) -> bool:
        return handle is self._handle

    @property
    def holds(self) -> bool:
        """Whether a native config is cached now."""
        return self._handle is not None

    def clear(self, capi: CApi) -> None:
        """Free the cached native config (if any)."""
        handle, self._handle, self._key, self._config = self._handle, None, None, None
        if handle is not None:
            capi.ffi.release(handle)


@contextlib.contextmanager
def native(capi: CApi, config: Optional[Any]) -> Iterator[Any]:
    """The native form of ``config`` for a ``with`` block; NULL (the pipeline's own config) for None."""
    if config is None:
        yield capi.ffi.NULL
        return
    handle = materialise(capi, config)
    try:
        yield handle
    finally:
        capi.ffi.release(handle)


def max_new_tokens(capi: CApi, handle: Any) -> int:
    """``ov_genai_generation_config_get_max_new_tokens``: the one getter of the C ABI."""
    n = capi.ffi.new("size_t*")
    capi.call("ov_genai_generation_config_get_max_new_tokens", handle, n)
    return int(n[0])


def pipeline_max_new_tokens(capi: CApi, getter: str, pipe: Any) -> int:
    """max_new_tokens of the copy of its config that a pipeline's ``getter`` (``ov_genai_*_get_generation_config``)
    hands out; the copy is freed here."""
    ffi = capi.ffi
    out = ffi.new("ov_genai_generation_config**")
    capi.call(getter, pipe, out)
    handle = ffi.gc(out[0], capi.lib.ov_genai_generation_config_free)
    try:
        return max_new_tokens(capi, handle)
    finally:
        ffi.release(handle)
