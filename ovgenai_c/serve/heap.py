"""A long-running server's garbage, collected on interpreters without reference counting (PyPy).

CPython frees each request's objects when the request is done. PyPy frees them at its next major collection, which
it schedules from the size of its nursery: by default half the CPU's cache, and no major collection before the heap
holds 8 nurseries. On a VM whose CPU reports a large cache that is a 240 MB nursery and no major collection
until ~1.9 GB: measured (2026-12-06, PyPy 7.3.11, the tiny model, continuous batching), the server grew by ~10 KB a
request, from 484 MB to 840 MB over 40,000 requests, none of it live (a full collection brought the object count
back). So while it serves, the server collects itself whenever its resident size has grown by
:data:`DEFAULT_COLLECT_MB` since the last collection (``OVGENAI_C_SERVE_COLLECT_MB``: another step, 0 = never); a
collection there takes ~50-65 ms. ``PYPY_GC_NURSERY`` / ``PYPY_GC_MIN`` tune PyPy's own schedule instead.
"""
from __future__ import annotations

import gc
import os
from typing import Callable, Optional

from .. import _interpreter
from .._native_memory import resident_bytes

COLLECT_ENV = "OVGENAI_C_SERVE_COLLECT_MB"
DEFAULT_COLLECT_MB = 64
CHECK_EVERY_S = 1.0


def collect_step_bytes() -> int:
    """How much resident growth triggers a collection: ``OVGENAI_C_SERVE_COLLECT_MB`` when set (0: never), else
    :data:`DEFAULT_COLLECT_MB` on an interpreter without reference counting and never on CPython."""
    raw = os.environ.get(COLLECT_ENV, "").strip()
    if raw:
        try:
            mb = float(raw)
        except ValueError:
            raise ValueError(f"{COLLECT_ENV} must be a number of megabytes (0: never collect), got {raw!r}") from None
        if mb < 0:
            raise ValueError(f"{COLLECT_ENV} must be >= 0, got {raw!r}")
        return int(mb * (1 << 20))
    return 0 if _interpreter.REFCOUNTED else DEFAULT_COLLECT_MB << 20


class HeapKeeper:
    """Collects once the resident size has grown by ``step_bytes`` since the last collection (or since the first
    :meth:`check`). ``resident`` and ``collect`` are the process's by default."""

    def __init__(self, step_bytes: int, resident: Callable[[], int] = resident_bytes,
                 collect: Callable[[], object] = gc.collect) -> None:
        self.step_bytes = step_bytes
        self._resident = resident
        self._collect = collect
        self.mark: Optional[int] = None  # the resident size after the last collection
        self.collections = 0

    def check(self) -> bool:
        """Collect if due; True when it collected."""
        if self.step_bytes <= 0:
            return False
        now = self._resident()
        if not now:  # (no /proc here)
            return False
        if self.mark is None:  # the first check sets the baseline
            self.mark = now
            return False
        if now - self.mark < self.step_bytes:
            return False
        self._collect()
        self.collections += 1
        self.mark = self._resident() or now
        return True
