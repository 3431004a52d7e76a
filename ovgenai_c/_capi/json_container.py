"""cdefs/01_json_container.h: JSON containers made from Python values."""
from __future__ import annotations

import json
from typing import Any

from .checked import CApi


def from_value(capi: CApi, value: Any) -> Any:
    """A native JSON container holding ``value`` (freed by ``ffi.gc``; release it as soon as it is used)."""
    ffi = capi.ffi
    out = ffi.new("ov_genai_json_container**")
    text = json.dumps(value, ensure_ascii=False).encode("utf-8")
    capi.call("ov_genai_json_container_create_from_json_string", out, text)
    return ffi.gc(out[0], capi.lib.ov_genai_json_container_free)
