"""A long-running server's garbage, collected on interpreters without reference counting (PyPy).

CPython frees each request's objects when the request is done. PyPy frees them at its next major collection, which it
schedules from the size of its nursery: by default half the CPU's cache, and no major collection before the heap holds
8 nurseries. On a VM whose CPU reports a large cache that is a 240 MB nursery and no major collection until ~1.9 GB:
measured (2026-12-06, PyPy 7.3.11, the tiny model, continuous batching), the server grew by ~10 KB a request, from 484
MB to 840 MB over 40,000 requests, none of it live (a full collection brought the object count back). So while it
serves, the server collects itself whenever the collector's heap (PyPy's arenas and large objects) has grown by
:data:`DEFAULT_COLLECT_MB` since the last collection (``OVGENAI_C_SERVE_COLLECT_MB``: another step, 0 = never); a
collection there takes ~50-65 ms. CPython, which frees as it goes, reports no such heap: there nothing is measured and
nothing collected. The heap, not the resident size, is what is watched: the memory a collection frees stays resident
and is filled again before the resident size grows, so a rule on the resident size let the server grow by a step after
every collection. ``PYPY_GC_NURSERY`` / ``PYPY_GC_MIN`` tune PyPy's own schedule instead.
"""
from __future__ import annotations

import gc
import os
from typing import Callable, Optional

COLLECT_ENV = "OVGENAI_C_SERVE_COLLECT_MB"
DEFAULT_COLLECT_MB = 64
CHECK_EVERY_S = 1.0


def collect_step_bytes() -> int:
    """How much heap growth (:func:`heap_bytes`) triggers a collection: ``OVGENAI_C_SERVE_COLLECT_MB`` when set (0:
    never), else :data:`DEFAULT_COLLECT_MB` where the collector reports its heap (PyPy) and never elsewhere."""
    raw = os.environ.get(COLLECT_ENV, "").strip()
    if raw:
        try:
            mb = float(raw)
        except ValueError:
            raise ValueError(f"{COLLECT_ENV} must be a number of megabytes (0: never collect), got {raw!r}") from None
        if mb < 0:
            raise ValueError(f"{COLLECT_ENV} must be >= 0, got {raw!r}")
        return int(mb * (1 << 20))
    return DEFAULT_COLLECT_MB << 20 if heap_bytes() else 0


def heap_bytes() -> int:
    """The garbage collector's heap outside its nursery: PyPy's arenas and separately allocated objects
    (``gc._get_stats()``); 0 where the collector reports no such figure (CPython)."""
    stats = getattr(gc, "_get_stats", None)
    if stats is None:
        return 0
    try:
        s = stats()
        return int(s.total_arena_memory) + int(s.total_rawmalloced_memory)
    except (AttributeError, TypeError, ValueError):
        return 0


class HeapKeeper:
    """Collects once ``measure()`` (:func:`heap_bytes`) has grown by ``step_bytes`` since the last collection (or
    since the first :meth:`check`)."""

    def __init__(self, step_bytes: int, measure: Callable[[], int] = heap_bytes,
                 collect: Callable[[], object] = gc.collect) -> None:
        self.step_bytes = step_bytes
        self._measure = measure
        self._collect = collect
        self.mark: Optional[int] = None  # the heap after the last collection
        self.collections = 0

    def check(self) -> bool:
        """Collect if due; True when it collected."""
        if self.step_bytes <= 0:
            return False
        now = self._measure()
        if not now:  # (nothing to go by here)
            return False
        if self.mark is None:  # the first check sets the baseline
            self.mark = now
            return False
        if now - self.mark < self.step_bytes:
            return False
        self._collect()
        self.collections += 1
        self.mark = self._measure() or now
        return True
