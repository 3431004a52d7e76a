"""cdefs/07_whisper_generation_config.h: native Whisper configs from and to plain field values.

The C ABI sets and reads the Whisper fields below and nothing else: the base GenerationConfig fields of a Whisper
config (max_new_tokens, eos, lang_to_id, alignment_heads, ...) can only be read back through a copy
(``get_generation_config``, and of that copy only max_new_tokens). A native config that must keep the model's
lang_to_id and eos therefore starts from the pipeline's own (``ov_genai_whisper_pipeline_get_generation_config``) or
from a generation_config.json (``create_from_json``), never from ``create`` (C++ defaults, an empty lang_to_id)."""
from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from . import generation_config
from .checked import CApi
from .text import buffer_text

_PREFIX = "ov_genai_whisper_generation_config_"
NOT_FOUND = -5  # ov_status_e NOT_FOUND: an optional string field that is unset

TOKEN_ID_FIELDS: Tuple[str, ...] = ("decoder_start_token_id", "pad_token_id", "translate_token_id",
                                    "transcribe_token_id", "prev_sot_token_id", "no_timestamps_token_id")
INDEX_FIELDS: Tuple[str, ...] = ("max_initial_timestamp_index",)
BOOL_FIELDS: Tuple[str, ...] = ("is_multilingual", "return_timestamps")
STRING_FIELDS: Tuple[str, ...] = ("language", "task", "initial_prompt", "hotwords")  # optional: None is unset
TOKEN_LIST_FIELDS: Tuple[str, ...] = ("begin_suppress_tokens", "suppress_tokens")
FIELDS: Tuple[str, ...] = TOKEN_ID_FIELDS + INDEX_FIELDS + BOOL_FIELDS + STRING_FIELDS + TOKEN_LIST_FIELDS
# fields only the bundled backend's extras (cdefs/95) set and read: read where the library has them; set only
# there (elsewhere the caller refused any value other than the pipeline's)
EXTRA_FIELDS: Dict[str, Tuple[str, str]] = {
    "word_timestamps": ("ovgenai_c_bundled_whisper_generation_config_set_word_timestamps",
                        "ovgenai_c_bundled_whisper_generation_config_get_word_timestamps"),
}
# the base GenerationConfig fields at once, from a native base config (the bundled backend's extra, cdefs/95)
SET_BASE = "ovgenai_c_bundled_whisper_generation_config_set_generation_config"
BASE_KEY = "generation_config"  # in update()'s values: a GenerationConfig whose base fields to set


def _own(capi: CApi, pointer: Any) -> Any:
    """``pointer`` freed by ``ffi.gc`` (release it once done)."""
    return capi.ffi.gc(pointer, capi.lib.ov_genai_whisper_generation_config_free)


def create(capi: CApi) -> Any:
    """A native config with the C ABI's defaults (C++ defaults, max_length 448, an empty lang_to_id)."""
    out = capi.ffi.new("ov_genai_whisper_generation_config**")
    capi.call(_PREFIX + "create", out)
    return _own(capi, out[0])


def from_json(capi: CApi, json_path: str) -> Any:
    """A native config read by the library from a generation_config.json."""
    out = capi.ffi.new("ov_genai_whisper_generation_config**")
    capi.call(_PREFIX + "create_from_json", json_path.encode("utf-8"), out,
              hint=f"check that {json_path} is a readable Whisper generation_config.json")
    return _own(capi, out[0])


def _get_string(capi: CApi, handle: Any, name: str) -> Optional[str]:
    ffi, fn = capi.ffi, _PREFIX + "get_" + name
    size = ffi.new("size_t*")
    status = getattr(capi.lib, fn)(handle, ffi.NULL, size)
    if status == NOT_FOUND:
        return None
    capi.check(status, fn)
    buf = ffi.new("char[]", size[0])
    capi.call(fn, handle, buf, size)
    return buffer_text(ffi, buf, size[0])


def _get_tokens(capi: CApi, handle: Any, name: str) -> List[int]:
    ffi = capi.ffi
    count = ffi.new("size_t*")
    capi.call(_PREFIX + "get_" + name + "_count", handle, count)
    buf = ffi.new("int64_t[]", max(count[0], 1))  # never NULL: the getter refuses a NULL array even for 0
    capi.call(_PREFIX + "get_" + name, handle, buf, count[0])
    return [int(buf[i]) for i in range(count[0])]


def get(capi: CApi, handle: Any, name: str) -> Any:
    """One Whisper field of a native config, as a Python value (None for an unset optional string)."""
    ffi = capi.ffi
    if name in STRING_FIELDS:
        return _get_string(capi, handle, name)
    if name in TOKEN_LIST_FIELDS:
        return _get_tokens(capi, handle, name)
    ctype = "int64_t*" if name in TOKEN_ID_FIELDS else "size_t*" if name in INDEX_FIELDS else "bool*"
    if name not in FIELDS:
        raise KeyError(name)
    out = ffi.new(ctype)
    capi.call(_PREFIX + "get_" + name, handle, out)
    return bool(out[0]) if name in BOOL_FIELDS else int(out[0])


def read(capi: CApi, handle: Any) -> Dict[str, Any]:
    """Every Whisper field of a native config (and the extras' where the library has them), plus
    ``max_new_tokens`` (read through the base-config copy)."""
    values = {name: get(capi, handle, name) for name in FIELDS}
    for name, (_, getter) in EXTRA_FIELDS.items():
        if capi.has(getter):
            out = capi.ffi.new("bool*")
            capi.call(getter, handle, out)
            values[name] = bool(out[0])
    values["max_new_tokens"] = base_max_new_tokens(capi, handle)
    return values


def base_max_new_tokens(capi: CApi, handle: Any) -> int:
    """max_new_tokens of the base GenerationConfig copy of a native Whisper config (the copy is freed here)."""
    ffi = capi.ffi
    out = ffi.new("ov_genai_generation_config**")
    capi.call(_PREFIX + "get_generation_config", handle, out)
    base = ffi.gc(out[0], capi.lib.ov_genai_generation_config_free)
    try:
        return generation_config.max_new_tokens(capi, base)
    finally:
        ffi.release(base)


def set_field(capi: CApi, handle: Any, name: str, value: Any) -> None:
    """Set one Whisper field (a string field: None unsets it; a token list: any iterable of ints)."""
    ffi, fn = capi.ffi, _PREFIX + "set_" + name
    if name in STRING_FIELDS:
        capi.call(fn, handle, ffi.NULL if value is None else ffi.new("char[]", value.encode("utf-8")))
    elif name in TOKEN_LIST_FIELDS:
        tokens = [int(t) for t in value]
        capi.call(fn, handle, ffi.new("int64_t[]", tokens) if tokens else ffi.NULL, len(tokens))
    elif name in BOOL_FIELDS:
        capi.call(fn, handle, bool(value))
    elif name in FIELDS:
        capi.call(fn, handle, int(value))
    else:
        raise KeyError(name)


def update(capi: CApi, handle: Any, values: Mapping[str, Any]) -> None:
    """Set every Whisper field named in ``values`` (in :data:`FIELDS` order, then the extras' where the library has
    them; other keys are ignored); under :data:`BASE_KEY` a GenerationConfig whose base fields to set first (the
    caller checked that the library has :data:`SET_BASE`)."""
    base = values.get(BASE_KEY)
    if base is not None:
        set_base(capi, handle, base)
    for name in FIELDS:
        if name in values:
            set_field(capi, handle, name, values[name])
    for name, (setter, _) in EXTRA_FIELDS.items():
        if name in values and capi.has(setter):
            capi.call(setter, handle, bool(values[name]))


def set_base(capi: CApi, handle: Any, config: Any) -> None:
    """Set every base GenerationConfig field of a native Whisper config to ``config``'s (a GenerationConfig, e.g.
    the WhisperGenerationConfig itself), through a native base config made for it."""
    base = generation_config.materialise(capi, config)
    try:
        capi.call(SET_BASE, handle, base)
    finally:
        capi.ffi.release(base)


def validate(capi: CApi, handle: Any) -> None:
    """The library's own validate (the C ABI drops its message: check in Python first for a real one)."""
    capi.call(_PREFIX + "validate", handle)


@contextlib.contextmanager
def released(capi: CApi, handle: Any) -> Iterator[Any]:
    """``handle`` for a ``with`` block, freed at its end."""
    try:
        yield handle
    finally:
        capi.ffi.release(handle)
