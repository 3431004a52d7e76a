"""The cffi FFI object, built once from the C declarations in ``cdefs/``.

cdefs are read in file-name order (the upstream include order). Files whose name starts with ``9`` are
ovgenai_c's own optional extras, not upstream headers. ``cdefs/openvino/`` holds the subset of OpenVINO's own C API
(libopenvino_c) that ovgenai_c uses; those functions are listed apart (:func:`openvino_functions`) and are never
looked up in the GenAI library. Nothing here loads a shared library.
"""
from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any, List, Optional, Tuple

_lock = threading.Lock()
_ffi: Any = None
_required: Tuple[str, ...] = ()
_optional: Tuple[str, ...] = ()
_openvino: Tuple[str, ...] = ()

# cdefs/openvino/ in upstream include order (a header is parsed after the ones it depends on)
_OPENVINO_ORDER = ("ov_common.h", "ov_shape.h", "ov_tensor.h", "ov_model.h", "ov_infer_request.h",
                   "ov_compiled_model.h", "ov_core.h")

_FUNC_RE = re.compile(r"^\s*[A-Za-z_][\w\s\*]*?\b(\w+)\s*\(", re.M)


def cdefs_dir() -> Path:
    """Where the declarations live: inside the installed package, else the source tree's top-level cdefs/."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "cdefs", here.parent / "cdefs"):
        if candidate.is_dir() and any(candidate.glob("*.h")):
            return candidate
    raise RuntimeError(f"ovgenai_c: C declarations not found (looked in {here / 'cdefs'} and {here.parent / 'cdefs'})")


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def declared_functions(text: str) -> List[str]:
    """Function names declared in a block of C declarations (typedef'd function pointers excluded)."""
    names = []
    for line in _strip_comments(text).splitlines():
        if line.lstrip().startswith(("typedef", "}", "{")) or "(*" in line:
            continue
        m = _FUNC_RE.match(line)
        if m:
            names.append(m.group(1))
    return names


def get_ffi() -> Any:
    """Return the shared ``cffi.FFI`` with every declaration parsed (thread-safe, built once)."""
    global _ffi, _required, _optional, _openvino
    if _ffi is not None:
        return _ffi
    with _lock:
        if _ffi is None:
            import cffi

            ffi = cffi.FFI()
            required: List[str] = []
            optional: List[str] = []
            for path in sorted(cdefs_dir().glob("*.h")):
                text = path.read_text(encoding="utf-8")
                ffi.cdef(_strip_comments(text))
                (optional if path.name.startswith("9") else required).extend(declared_functions(text))
            openvino: List[str] = []
            ov_dir = cdefs_dir() / "openvino"
            ov_files = sorted(ov_dir.glob("*.h"), key=lambda p: (
                _OPENVINO_ORDER.index(p.name) if p.name in _OPENVINO_ORDER else len(_OPENVINO_ORDER), p.name))
            for path in ov_files:
                text = path.read_text(encoding="utf-8")
                ffi.cdef(_strip_comments(text))
                openvino.extend(declared_functions(text))
            _required, _optional, _openvino = tuple(required), tuple(optional), tuple(openvino)
            _ffi = ffi
    return _ffi


def required_functions() -> Tuple[str, ...]:
    """Every upstream C function the binding declares (83 for the LLM side of GenAI 2026.x)."""
    get_ffi()
    return _required


def optional_functions() -> Tuple[str, ...]:
    """Extras that only the bundled backend exports."""
    get_ffi()
    return _optional


def openvino_functions() -> Tuple[str, ...]:
    """The OpenVINO C API functions declared in ``cdefs/openvino/`` (looked up in libopenvino_c, not GenAI)."""
    get_ffi()
    return _openvino


def cstr(ffi: Any, value: Optional[str]) -> Any:
    """A NUL-terminated UTF-8 ``char[]`` for ``value`` (NULL for None); the caller keeps it alive."""
    if value is None:
        return ffi.NULL
    return ffi.new("char[]", value.encode("utf-8"))
