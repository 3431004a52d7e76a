"""Fixtures of the reliability battery and its session-end summary line."""
from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest

from relsupport import STATS, bundled_library_path, make_model_dir
from testsupport import transient_native_objects

_LEAK_KINDS = ("config", "results", "perf_metrics", "chat_history", "json_container")


@pytest.fixture
def double(double):
    """tests/conftest.py's double (reset before and after); after the test every transient native object must be
    freed. The root make_pipe builds on this fixture, so its pipelines are closed before the check."""
    yield double
    double.reset()

    # (what open pipelines keep between calls — e.g. shared_pipe's cached config — is not transient)
    deadline = time.monotonic() + 5
    while any(transient_native_objects(double, _LEAK_KINDS).values()) and time.monotonic() < deadline:
        gc.collect()  # exceptions kept in tracebacks hold cdata owners (ffi.gc) until collected
        time.sleep(0.01)
    left = transient_native_objects(double, _LEAK_KINDS)
    leaked = sum(left.values())
    if leaked:
        with STATS.lock:
            STATS.leaked += leaked
        pytest.fail(f"leaked native objects on the double (live minus what open pipelines keep): {left}; live "
                    f"{ {k: double.live(k) for k in _LEAK_KINDS} }")


@pytest.fixture
def dbl(double):
    """The battery's name for the leak-checked double."""
    return double


@pytest.fixture(scope="session")
def rel_model_dir(tmp_path_factory) -> Path:
    return make_model_dir(tmp_path_factory.mktemp("rel") / "model")


@pytest.fixture(scope="module")
def shared_pipe(double_session, rel_model_dir):
    """One pipeline reused by many cases of a module (each case checks it still works afterwards)."""
    import ovgenai_c

    double_session.reset()
    p = ovgenai_c.LLMPipeline(rel_model_dir, "CPU", library=double_session.library)
    yield p
    p.close()
    if double_session.live("pipeline"):
        with STATS.lock:
            STATS.leaked += double_session.live("pipeline")


@pytest.fixture(scope="session")
def bundled_path() -> Path:
    path = bundled_library_path()
    if path is None:
        pytest.skip("bundled backend not built (ovgenai_c/_bundled/ or native/build/libovgenai_c_bundled.so)")
    return path


@pytest.fixture(scope="session")
def bundled_lib(bundled_path):
    from ovgenai_c import _loader

    lib = _loader.open_library(str(bundled_path))
    if not lib.has_live_counter:
        pytest.skip("the bundled backend does not export ovgenai_c_bundled_live_handles")
    return lib


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not STATS.cases and not STATS.subprocesses:
        return
    groups = ", ".join(f"{k} {v}" for k, v in sorted(STATS.cases.items()))
    rss = ", ".join(f"{k} {v:+.2f}%" for k, v in sorted(STATS.rss.items())) or "not measured"
    terminalreporter.write_sep("-", "reliability battery")
    terminalreporter.write_line(
        f"reliability: cases tried {STATS.total_cases()} ({groups}); subprocesses {STATS.subprocesses}; "
        f"crashes {STATS.crashes}"
        f"{f' (+{STATS.known_defect_crashes} in strict-xfail known-defect cases)' if STATS.known_defect_crashes else ''}; hangs {STATS.hangs}; leaked handles {STATS.leaked}; RSS growth {rss}")
    if STATS.events:
        terminalreporter.write_line("reliability events: " + ", ".join(f"{k} {v}" for k, v in sorted(STATS.events.items())))
    for note in STATS.notes:
        terminalreporter.write_line(f"reliability note: {note}")
