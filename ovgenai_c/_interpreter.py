"""The running interpreter, asked in one place.

CPython frees a dropped object at once (reference counting), wakes a blocked wait for ``_thread.interrupt_main()``
and freezes daemon threads at exit, and every optional extension wheel exists for it. Other interpreters (PyPy)
do none of these; the modules that differ there ask :data:`REFCOUNTED` and name it with :data:`NAME`.
"""
from __future__ import annotations

import platform
import sys

NAME: str = platform.python_implementation()  # "CPython", "PyPy", ... (what users are shown)
REFCOUNTED: bool = sys.implementation.name == "cpython"  # CPython: everything above holds
