"""What a native pipeline holds, made known to a garbage collector that cannot see it (PyPy), and the collections
that stand in there for CPython's prompt frees.

CPython frees a pipeline nobody references at once (reference counting), and its finalizer hands the native free to
the pipeline's owner thread. PyPy frees it at a major collection, which it schedules by the size of the *Python*
heap: a loop that rebinds ``pipe = LLMPipeline(...)`` without ``close()`` kept every model loaded (measured on PyPy
7.3: 15 SmolLM2 pipelines alive, 7 GB resident, and no collection in sight). So on PyPy a pipeline's creation first
runs the GC — the dropped ones are freed before another model loads, as CPython would have freed them — and then
tells the GC how much native memory the new one took (the growth of the resident size across its creation;
``__pypy__.add_memory_pressure``), so later collections come as they would for Python objects that size.
``close()`` / ``with`` free at once on every interpreter.
"""
from __future__ import annotations

import gc
import os
import threading
from typing import Callable, Optional

from . import _interpreter

FLOOR_BYTES = 32 << 20  # the least a pipeline is counted for: owner thread, compiled graph, buffers, caches


def _pressure_hook() -> Optional[Callable[[int], None]]:
    try:
        import __pypy__  # type: ignore[import-not-found]
    except ImportError:  # an interpreter without PyPy's hook: the collections alone
        return None
    return getattr(__pypy__, "add_memory_pressure", None)


_add_pressure = None if _interpreter.REFCOUNTED else _pressure_hook()


def collect() -> None:
    """``gc.collect()``, without losing a Ctrl-C: a KeyboardInterrupt that lands while the collection runs a
    finalizer or weakref callback on the main thread is handed to sys.unraisablehook and dropped by the interpreter
    (PyPy runs them all inside the collection); the main-thread waits' hook (ovgenai_c._owner) takes it and it is
    raised once the collection is over. Other threads only collect: an interrupt never lands there, and the
    process-wide hook is left alone."""
    if threading.current_thread() is not threading.main_thread():
        gc.collect()
        return
    from ._owner import catching_swallowed_interrupts

    with catching_swallowed_interrupts():
        gc.collect()


def reclaim_abandoned(busy: bool) -> None:
    """Before a call that would queue behind a running one (``busy``): on PyPy, collect, so that a stream iterator
    dropped half-way (``for piece in pipe.stream(...): break``) cancels its call now, as it does at once on CPython;
    the new call would otherwise wait for that generation to run to its end (6 s in the test). Nothing on CPython."""
    if busy and not _interpreter.REFCOUNTED:
        collect()


def before_close() -> None:
    """Call before a pipeline is freed. On PyPy: collect, so that the native objects of results dropped before the
    close go first — a collection that has already found such a result dead (its weak reference cleared, so the
    close cannot read it) may not have run its native free yet — and nothing native outlives the pipeline, as on
    CPython. Nothing on CPython."""
    if not _interpreter.REFCOUNTED:
        collect()


def resident_bytes() -> int:
    """This process's resident memory (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def before_create() -> Optional[int]:
    """Call before a native pipeline is created. On PyPy: collect (what was dropped unclosed goes now) and return the
    resident size for :func:`after_create`; on CPython None, and nothing is done."""
    if _interpreter.REFCOUNTED:
        return None
    collect()
    return resident_bytes()


def after_create(before: Optional[int]) -> None:
    """Call once the native pipeline exists, with :func:`before_create`'s value: on PyPy the GC is told what it took
    (at least :data:`FLOOR_BYTES`)."""
    if before is None or _add_pressure is None:
        return
    now = resident_bytes()
    _add_pressure(max(now - before if now and before else 0, FLOOR_BYTES))
