"""The running interpreter, asked in one place.

CPython frees a dropped object at once (reference counting), wakes a blocked wait for ``_thread.interrupt_main()``
and freezes daemon threads at exit, and every optional extension wheel exists for it. Other interpreters (PyPy)
do none of these; the modules that differ there ask :data:`REFCOUNTED` and name it with :data:`NAME`.
CPython's ``_cffi_backend`` also turns a C type string into a type with the interpreter lock held throughout; PyPy's
does not (:data:`CFFI_TYPES_THREAD_SAFE`).
"""
from __future__ import annotations

import platform
import sys

NAME: str = platform.python_implementation()  # "CPython", "PyPy", ... (what users are shown)
REFCOUNTED: bool = sys.implementation.name == "cpython"  # CPython: everything above holds
# PyPy's cffi parses a type string (ffi.new("char[]"), a library's function types on first access) with the
# interpreter lock released: two threads doing it at once on one FFI got each other's types, and kept them cached
# ("ovgenai_relay**" became "float **"). Elsewhere than CPython, ovgenai_c does that one thread at a time (_ffi).
CFFI_TYPES_THREAD_SAFE: bool = sys.implementation.name == "cpython"
