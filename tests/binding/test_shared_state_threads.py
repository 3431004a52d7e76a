"""What the binding shares between threads on every interpreter: the FFI's type work on first use. It broke on PyPy
only (its cffi parses a type string with the interpreter lock released)."""
from __future__ import annotations

import gc
import sys
import threading
import time

import pytest

from ovgenai_c import _ffi

# type strings the binding uses, of different shapes (pointers to opaque structs, arrays, scalars, a callback)
TYPE_STRINGS = ("ovgenai_relay**", "char[]", "ov_genai_llm_pipeline**", "size_t*", "float*", "int*", "char*[]",
                "ov_genai_generation_config**", "ov_genai_decoded_results**", "ov_genai_perf_metrics**",
                "ov_genai_chat_history**", "int64_t[]", "ov_status_e*", "bool*")
THREADS = 8


def fresh_ffi():
    """A new FFI as :func:`ovgenai_c._ffi.get_ffi` makes its one (nothing parsed yet)."""
    return _ffi._for_this_interpreter(_ffi._build())


@pytest.fixture
def tiny_switch_interval():
    """Switch threads as often as the interpreter allows, so that a race shows in seconds."""
    if not hasattr(sys, "setswitchinterval"):
        yield
        return
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_type_strings_first_used_by_many_threads_at_once_get_their_own_types(tiny_switch_interval):
    reference_ffi = fresh_ffi()
    reference = {name: reference_ffi.getctype(reference_ffi.typeof(name)) for name in TYPE_STRINGS}
    wrong = []
    deadline = time.monotonic() + 3
    rounds = 0
    while time.monotonic() < deadline or rounds < 20:
        rounds += 1
        ffi = fresh_ffi()
        barrier = threading.Barrier(THREADS)

        def use(i, ffi=ffi, barrier=barrier):
            barrier.wait()
            names = TYPE_STRINGS[i % len(TYPE_STRINGS):] + TYPE_STRINGS[:i % len(TYPE_STRINGS)]
            for name in names:
                try:
                    got = ffi.getctype(ffi.typeof(name))
                    if name.endswith("[]"):
                        ffi.new(name, 4)
                    else:
                        ffi.sizeof(name)
                except Exception as exc:  # (before the fix: "cannot instantiate ctype 'char(*)[]' ...")
                    got = repr(exc)
                if got != reference[name]:
                    wrong.append((name, got))

        threads = [threading.Thread(target=use, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # what the FFI keeps for each string afterwards is right too (a wrong one would stay for the process's life)
        wrong += [(name, ffi.getctype(ffi.typeof(name))) for name in TYPE_STRINGS
                  if ffi.getctype(ffi.typeof(name)) != reference[name]]
    assert not wrong, f"{len(wrong)} wrong types in {rounds} rounds, e.g. {wrong[:4]}"


def test_a_library_first_used_by_many_threads_at_once_has_one_type_per_function(double_lib_path,
                                                                                 tiny_switch_interval):
    """A function's types are made at its first access: threads getting there together must not make two of them
    (cffi passes a pointer only to a function whose parameter type is the very type object it was made with)."""
    split = []
    deadline = time.monotonic() + 2
    rounds = 0
    while time.monotonic() < deadline or rounds < 10:
        rounds += 1
        ffi = fresh_ffi()
        lib = ffi.dlopen(str(double_lib_path))
        names = [n for n in dir(lib) if n.startswith("ov_genai_") and _ffi.has_symbol(lib, n)]
        seen = [dict() for _ in range(THREADS)]
        barrier = threading.Barrier(THREADS)

        def use(i, lib=lib, names=names, barrier=barrier):
            barrier.wait()
            step = 7 * i % len(names)
            for name in names[step:] + names[:step]:
                seen[i][name] = ffi.typeof(getattr(lib, name))

        threads = [threading.Thread(target=use, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        split += [name for name in names if len({id(s[name]) for s in seen}) != 1]
        out = ffi.new("ov_genai_generation_config**")
        assert lib.ov_genai_generation_config_create(out) == 0  # a pointer made from a type string is accepted
        lib.ov_genai_generation_config_free(out[0])
    assert not split, f"{len(split)} functions with two types in {rounds} rounds, e.g. {split[:4]}"
