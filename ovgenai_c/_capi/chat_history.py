"""cdefs/02_chat_history.h: a native chat history made from a conversation's plain values."""
from __future__ import annotations

from typing import Any, Dict, List

from . import json_container
from .checked import CApi


def materialise(capi: CApi, messages: List[Dict[str, Any]], tools: List[Any], extra_context: Dict[str, Any]) -> Any:
    """A native chat history (freed by ``ffi.gc``); the JSON containers it is made from are freed at once."""
    ffi = capi.ffi
    container = json_container.from_value(capi, messages)
    out = ffi.new("ov_genai_chat_history**")
    try:
        capi.call("ov_genai_chat_history_create_from_json_container", out, container)
    finally:
        ffi.release(container)
    handle = ffi.gc(out[0], capi.lib.ov_genai_chat_history_free)
    try:
        for value, setter in ((tools, "ov_genai_chat_history_set_tools"),
                              (extra_context, "ov_genai_chat_history_set_extra_context")):
            if value:
                container = json_container.from_value(capi, value)
                try:
                    capi.call(setter, handle, container)
                finally:
                    ffi.release(container)
    except BaseException:
        ffi.release(handle)
        raise
    return handle
