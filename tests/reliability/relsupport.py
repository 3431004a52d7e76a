"""Shared helpers of the reliability battery: the ABI double's controls, a crash-safe subprocess runner and the
counters that the session summary prints (cases tried, crashes, hangs, leaked handles, RSS growth)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
CONTROLS_H = TESTS / "abi_double" / "controls.h"
TINY_IR = TESTS / "fixtures" / "tiny" / "ir"


class Stats:
    """Process-wide counters of the battery (printed by the conftest's pytest_terminal_summary)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cases: Dict[str, int] = {}
        self.crashes = 0
        self.hangs = 0
        self.known_defect_crashes = 0  # crashes of cases marked xfail(strict) for a reported defect
        self.leaked = 0
        self.subprocesses = 0
        self.rss: Dict[str, float] = {}
        self.notes: List[str] = []
        self.events: Dict[str, int] = {}

    def event(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.events[name] = self.events.get(name, 0) + n

    def case(self, group: str, n: int = 1) -> None:
        with self.lock:
            self.cases[group] = self.cases.get(group, 0) + n

    def total_cases(self) -> int:
        return sum(self.cases.values())


STATS = Stats()


from abi_double.controls import make_model_dir  # noqa: E402,F401  (the tests import it from here)


def _count_hang() -> None:
    with STATS.lock:
        STATS.hangs += 1


def start_threads(target: Any, n: int) -> Any:
    """testsupport.Threads whose hang (join timeout) counts in the battery's summary."""
    from testsupport import Threads

    return Threads(target, n, on_hang=_count_hang)


def run_threads(target: Any, n: int = 8, timeout: float = 60.0) -> List[tuple]:
    """testsupport.run_threads whose hang counts in the battery's summary."""
    return start_threads(target, n).join(timeout)


def bundled_library_path() -> Optional[Path]:
    from testsupport import bundled_library_path as _find  # env, then the binding's own search

    return _find()


PRELUDE = textwrap.dedent("""
    import sys, os, json
    sys.path.insert(0, {root!r})
    sys.path.insert(1, {tests!r})
    from testsupport import settle_garbage  # (PyPy: what was dropped is freed at its collections)
    DOUBLE = {double!r}
    def _ctl():
        import cffi
        f = cffi.FFI(); f.cdef(open({controls!r}).read())
        return f, f.dlopen(DOUBLE)
""")


def run_snippet(code: str, *, double: Optional[Path] = None, timeout: float = 60.0, group: str = "subprocess",
                env: Optional[Dict[str, str]] = None, expect_rc: int = 0,
                known_defect: bool = False) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (``sys.executable -c``). A signal death counts as a crash, a timeout
    as a hang; both fail the calling test instead of killing the run. Returns the finished process."""
    src = PRELUDE.format(root=str(ROOT), tests=str(ROOT / "tests"), double=str(double) if double else None, controls=str(CONTROLS_H))
    src += textwrap.dedent(code)
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env.setdefault("PYTHONFAULTHANDLER", "1")
    with STATS.lock:
        STATS.subprocesses += 1
    try:
        proc = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=timeout,
                              env=full_env, cwd=str(ROOT))
    except subprocess.TimeoutExpired as exc:
        with STATS.lock:
            STATS.hangs += 1
        raise AssertionError(f"[{group}] subprocess hung (> {timeout} s)\nstdout:\n{exc.stdout}\nstderr:\n{exc.stderr}")
    if proc.returncode < 0:
        with STATS.lock:
            if known_defect:
                STATS.known_defect_crashes += 1
            else:
                STATS.crashes += 1
        raise AssertionError(f"[{group}] subprocess crashed with signal {signal.Signals(-proc.returncode).name}\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    assert proc.returncode == expect_rc, (f"[{group}] exit code {proc.returncode} (expected {expect_rc})\n"
                                          f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def last_json(proc: subprocess.CompletedProcess) -> Any:
    """The last stdout line that is a JSON document."""
    for line in reversed(proc.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{") or line.startswith("["):
            return json.loads(line)
    raise AssertionError(f"no JSON line in stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
