"""cdefs/91_ovgenai_c_chat_template.h (bundled backend only): render a chat template with the bundled C++ Jinja
engine."""
from __future__ import annotations

from .checked import CApi
from .text import buffer_text

RENDER = "ovgenai_c_bundled_render_chat_template"


def render(capi: CApi, template: bytes, messages_json: bytes, tools_json: bytes, extra_context_json: bytes,
           add_generation_prompt: bool) -> str:
    """The rendered text (two-call string convention: the size, then the text)."""
    ffi = capi.ffi
    args = (template, messages_json, tools_json, extra_context_json, 1 if add_generation_prompt else 0)
    size = ffi.new("size_t*")
    capi.call(RENDER, *args, ffi.NULL, size)
    buf = ffi.new("char[]", size[0])
    capi.call(RENDER, *args, buf, size)
    return buffer_text(ffi, buf, size[0])
