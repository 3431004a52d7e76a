"""What the binding shares between threads on every interpreter: the FFI's type work on first use, and the weak
registries of live pipelines and unread results. Both broke on PyPy (its cffi parses a type string with the
interpreter lock released; its collections run weakref callbacks on whichever thread allocates), and each cost one
pipeline in ~20 of test_many_pipelines_created_and_dropped_from_many_threads there. The type work broke on CPython
too: a collection that runs a finalizer inside cffi's making of a type hands the lock to another thread, which made
the same declared struct, and cffi 2.0's check of that aborted the process (so those tests run in a child)."""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import pytest

from ovgenai_c import _ffi
from ovgenai_c._weak_registry import WeakRegistry

from testsupport import child_outcome

ROOT = Path(__file__).resolve().parents[2]
# type strings the binding uses, of different shapes (pointers to opaque structs, arrays, scalars)
TYPE_STRINGS = ("ovgenai_relay**", "char[]", "ov_genai_llm_pipeline**", "size_t*", "float*", "int*", "char*[]",
                "ov_genai_generation_config**", "ov_genai_decoded_results**", "ov_genai_perf_metrics**",
                "ov_genai_chat_history**", "int64_t[]", "ov_status_e*", "bool*", "streamer_callback*",
                "ov_shape_t*", "ov_genai_perf_metrics*")
THREADS = 8


@pytest.fixture
def tiny_switch_interval():
    """Switch threads as often as the interpreter allows, so that a race shows in seconds."""
    before = set_tiny_switch_interval()
    try:
        yield
    finally:
        if before is not None:
            sys.setswitchinterval(before)


def set_tiny_switch_interval():
    if not hasattr(sys, "setswitchinterval"):
        return None
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    return before


def rounds_for(seconds: float, at_least: int):
    """1, 2, ... for ``seconds``, and at least ``at_least`` of them."""
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline or n < at_least:
        n += 1
        yield n


def all_at_once(use) -> None:
    """``use(i)`` on THREADS threads released together, joined."""
    barrier = threading.Barrier(THREADS)

    def run(i: int) -> None:
        barrier.wait()
        use(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class Finalized:
    """Garbage in a cycle whose finalizer runs Python code: a collection started by any allocation (inside cffi's
    making of a type, too) runs it, and the interpreter may switch threads there."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(20))


def make_garbage() -> None:
    for _ in range(3):
        Finalized()


def type_strings_first_used_at_once(seconds: float) -> dict:
    """Fresh FFIs whose type strings THREADS threads use first at once: the types they got that differ from a
    reference FFI's."""
    reference_ffi = _ffi.new_ffi()
    reference = {name: reference_ffi.getctype(reference_ffi.typeof(name)) for name in TYPE_STRINGS}
    wrong = []
    for rounds in rounds_for(seconds, 20):
        ffi = _ffi.new_ffi()

        def use(i, ffi=ffi):
            names = TYPE_STRINGS[i % len(TYPE_STRINGS):] + TYPE_STRINGS[:i % len(TYPE_STRINGS)]
            for name in names:
                make_garbage()
                try:
                    got = ffi.getctype(ffi.typeof(name))
                    if name.endswith("[]"):
                        ffi.new(name, 4)
                    else:
                        ffi.sizeof(name)
                except Exception as exc:  # (PyPy before the fix: "cannot instantiate ctype 'char(*)[]' ...")
                    got = repr(exc)
                if got != reference[name]:
                    wrong.append((name, got))

        all_at_once(use)
        # what the FFI keeps for each string afterwards is right too (a wrong one would stay for the process's life)
        wrong += [(name, ffi.getctype(ffi.typeof(name))) for name in TYPE_STRINGS
                  if ffi.getctype(ffi.typeof(name)) != reference[name]]
    return {"rounds": rounds, "wrong": wrong}


def library_first_used_at_once(seconds: float, library: str) -> dict:
    """Fresh FFIs and loads of ``library`` whose functions THREADS threads access first at once: the functions that
    got two types."""
    split = []
    for rounds in rounds_for(seconds, 10):
        ffi = _ffi.new_ffi()
        lib = ffi.dlopen(library)
        names = [n for n in dir(lib) if n.startswith("ov_genai_") and _ffi.has_symbol(lib, n)]
        seen = [dict() for _ in range(THREADS)]

        def use(i, lib=lib, names=names):
            step = 7 * i % len(names)
            for name in names[step:] + names[:step]:
                make_garbage()
                seen[i][name] = ffi.typeof(getattr(lib, name))

        all_at_once(use)
        split += [name for name in names if len({id(s[name]) for s in seen}) != 1]
        out = ffi.new("ov_genai_generation_config**")
        if lib.ov_genai_generation_config_create(out) != 0:  # a pointer made from a type string is accepted
            split.append("ov_genai_generation_config_create refused a pointer from ffi.new")
        else:
            lib.ov_genai_generation_config_free(out[0])
    return {"rounds": rounds, "wrong": split}


def run_in_child(*args: str) -> dict:
    """This file run as a script with ``args`` (a crash of cffi must fail the test, not end the test run)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env, timeout=300)
    child_outcome(proc, f"first uses from {THREADS} threads at once ({args[0]})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_type_strings_first_used_by_many_threads_at_once_get_their_own_types():
    """Before, in a few seconds: PyPy got wrong types (19 in 371 rounds); CPython aborted in cffi's check that the
    declared struct it made was not made meanwhile (10 of 10 runs, in 0.1-1.6 s)."""
    got = run_in_child("strings", "3")
    assert not got["wrong"], f"{len(got['wrong'])} wrong types in {got['rounds']} rounds, e.g. {got['wrong'][:4]}"


def test_a_library_first_used_by_many_threads_at_once_has_one_type_per_function(double_lib_path):
    """A function's types are made at its first access: threads getting there together must not make two of them
    (cffi passes a pointer only to a function whose parameter type is the very type object it was made with)."""
    got = run_in_child("functions", "2", str(double_lib_path))
    assert not got["wrong"], f"{len(got['wrong'])} functions with two types in {got['rounds']} rounds, " \
                             f"e.g. {got['wrong'][:4]}"


class Item:
    pass


def test_weak_registry_keeps_each_live_object_once_and_forgets_the_dead():
    reg: WeakRegistry[Item] = WeakRegistry()
    a, b = Item(), Item()
    reg.add(a)
    reg.add(a)
    reg.add(b)
    assert reg.snapshot() == [a, b] and list(reg) == [a, b] and len(reg) == 2
    reg.discard(a)
    reg.discard(a)
    assert reg.snapshot() == [b]
    del b
    gc.collect()
    gc.collect()
    assert reg.snapshot() == [] and len(reg) == 0
    c = Item()
    reg.add(c)
    reg.clear()
    assert reg.snapshot() == []


def test_weak_registry_listed_while_other_threads_drop_members(tiny_switch_interval):
    """A listing on one thread while collections on another drop members (weakref.WeakSet raised "set changed size
    during iteration" here on PyPy within a few rounds)."""
    errors = []
    for _ in rounds_for(3, 10):
        if errors:
            break
        reg: WeakRegistry[Item] = WeakRegistry()
        kept = [Item() for _ in range(50)]
        dying = [Item() for _ in range(200)]
        for obj in kept + dying:
            reg.add(obj)
        del obj
        stop = threading.Event()

        def lister(reg=reg, stop=stop):
            while not stop.is_set():
                try:
                    listed = reg.snapshot()
                    assert all(type(o) is Item for o in listed)
                except Exception as exc:
                    errors.append(repr(exc))
                    return

        def dropper(dying=dying):
            while dying:
                dying.pop()
                if len(dying) % 20 == 0:
                    gc.collect()

        threads = [threading.Thread(target=lister), threading.Thread(target=dropper)]
        for t in threads:
            t.start()
        threads[1].join()
        stop.set()
        threads[0].join()
        gc.collect()
        gc.collect()
        assert set(map(id, reg.snapshot())) == set(map(id, kept))
    assert not errors, errors[:2]


def test_weak_registry_holds_nothing_alive():
    reg: WeakRegistry[Item] = WeakRegistry()
    obj = Item()
    ref = weakref.ref(obj)
    reg.add(obj)
    del obj
    gc.collect()
    gc.collect()
    assert ref() is None and reg.snapshot() == []


if __name__ == "__main__":  # the child of run_in_child: what, seconds[, library]; prints its result as JSON
    set_tiny_switch_interval()
    if hasattr(gc, "set_threshold"):
        gc.set_threshold(5)  # collections at nearly every allocation, each with finalizers to run
    what, seconds = sys.argv[1], float(sys.argv[2])
    result = type_strings_first_used_at_once(seconds) if what == "strings" else \
        library_first_used_at_once(seconds, sys.argv[3])
    print(json.dumps(result))
