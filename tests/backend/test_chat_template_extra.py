"""ovgenai_c_bundled_render_chat_template (cdefs/91_ovgenai_c_chat_template.h) called directly through cffi:
rendering, the two-call string convention, and every failure as a status plus last-error text."""
from __future__ import annotations

import json
import pathlib

import pytest

cffi = pytest.importorskip("cffi")

CDEFS = pathlib.Path(__file__).resolve().parents[2] / "cdefs"
OK, GENERAL_ERROR, OUT_OF_BOUNDS, INVALID_C_PARAM = 0, -1, -6, -14


@pytest.fixture(scope="module")
def render_api(api):
    """A separate FFI over the same library (the ``api`` fixture skips when it is not built), with the extra."""
    from testsupport import bundled_library_path

    path = bundled_library_path() or CDEFS.parent / "ovgenai_c" / "_bundled" / "libovgenai_c_bundled.so"
    ffi = cffi.FFI()
    for header in sorted(CDEFS.glob("0*.h")) + sorted(CDEFS.glob("9*.h")):  # the extras use upstream's types
        ffi.cdef(header.read_text())
    lib = ffi.dlopen(str(path))
    try:
        lib.ovgenai_c_bundled_render_chat_template
    except AttributeError:
        pytest.skip(f"{path} predates the chat-template extra: rebuild with scripts/build_backend.sh")
    return ffi, lib


def _render(ffi, lib, template, messages, tools=None, extra=None, add=True):
    enc = lambda v: ffi.NULL if v is None else (v if isinstance(v, bytes) else json.dumps(v).encode())  # noqa: E731
    args = (template.encode() if isinstance(template, str) else template, enc(messages), enc(tools), enc(extra),
            1 if add else 0)
    size = ffi.new("size_t*")
    st = lib.ovgenai_c_bundled_render_chat_template(*args, ffi.NULL, size)
    if st != OK:
        return st, ffi.string(lib.ovgenai_c_bundled_last_error()).decode()
    buf = ffi.new("char[]", size[0])
    st = lib.ovgenai_c_bundled_render_chat_template(*args, buf, size)
    assert st == OK
    return st, ffi.string(buf).decode()


MSGS = [{"role": "user", "content": "Hi 🎉"}, {"role": "assistant", "content": "Hello"}]


def test_renders_messages_tools_and_extra_context(render_api):
    ffi, lib = render_api
    tpl = ("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<gen>"
           "{% endif %}|{{ tools is none }}|{{ bos_token }}|{{ flag }}")
    assert _render(ffi, lib, tpl, MSGS, None, {"bos_token": "<s>", "flag": 3}) == \
        (OK, "<user>Hi 🎉<assistant>Hello<gen>|True|<s>|3")
    # like transformers, tools is none unless a non-empty array is given
    assert _render(ffi, lib, "{{ tools is none }}", MSGS, [], None)[1] == "True"
    assert _render(ffi, lib, "{{ tools | length }}", MSGS, [{"type": "function"}], None)[1] == "1"
    assert _render(ffi, lib, "{{ add_generation_prompt }}", MSGS, None, None, add=False)[1] == "False"


def test_two_call_convention(render_api):
    ffi, lib = render_api
    args = (b"{{ messages[0].content }}", json.dumps(MSGS).encode(), ffi.NULL, ffi.NULL, 0)
    size = ffi.new("size_t*")
    assert lib.ovgenai_c_bundled_render_chat_template(*args, ffi.NULL, size) == OK
    need = size[0]
    assert need == len("Hi 🎉".encode()) + 1
    small = ffi.new("char[]", need - 1)
    size[0] = need - 1
    assert lib.ovgenai_c_bundled_render_chat_template(*args, small, size) == OUT_OF_BOUNDS
    assert b"too small" in ffi.string(lib.ovgenai_c_bundled_last_error())
    buf = ffi.new("char[]", need)
    size[0] = need
    assert lib.ovgenai_c_bundled_render_chat_template(*args, buf, size) == OK
    assert ffi.string(buf).decode() == "Hi 🎉" and size[0] == need


def test_failures_are_statuses_with_text(render_api):
    ffi, lib = render_api
    st, text = _render(ffi, lib, "{{ raise_exception('custom failure') }}", MSGS)
    assert st == GENERAL_ERROR and "custom failure" in text
    st, text = _render(ffi, lib, "{% for %}", MSGS)
    assert st == GENERAL_ERROR and text
    st, text = _render(ffi, lib, "x", b"[not json")
    assert st == INVALID_C_PARAM and "messages_json" in text
    st, text = _render(ffi, lib, "x", {"role": "user"})
    assert st == INVALID_C_PARAM and "array" in text
    st, text = _render(ffi, lib, "x", MSGS, {"not": "an array"})
    assert st == INVALID_C_PARAM and "tools_json" in text
    st, text = _render(ffi, lib, "x", MSGS, None, [1, 2])
    assert st == INVALID_C_PARAM and "extra_context_json" in text
    size = ffi.new("size_t*")
    assert lib.ovgenai_c_bundled_render_chat_template(ffi.NULL, b"[]", ffi.NULL, ffi.NULL, 1, ffi.NULL, size) == \
        INVALID_C_PARAM
    assert lib.ovgenai_c_bundled_render_chat_template(b"x", ffi.NULL, ffi.NULL, ffi.NULL, 1, ffi.NULL, size) == \
        INVALID_C_PARAM
    assert lib.ovgenai_c_bundled_render_chat_template(b"x", b"[]", ffi.NULL, ffi.NULL, 1, ffi.NULL, ffi.NULL) == \
        INVALID_C_PARAM
    # a failure does not leave a stale result behind: the next good call renders anew
    assert _render(ffi, lib, "ok", MSGS) == (OK, "ok")
