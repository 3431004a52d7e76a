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
BUNDLED_CANDIDATES = (ROOT / "ovgenai_c" / "_bundled" / "libovgenai_c_bundled.so",
                      ROOT / "native" / "build" / "libovgenai_c_bundled.so")


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


class Double:
    """The ABI double's test controls (live handle counters, faults, token delay, thread log...)."""

    def __init__(self, path: Path) -> None:
        import cffi

        from ovgenai_c import _loader

        self.path = Path(path)
        self.library = _loader.open_library(str(path))
        self.cffi = cffi.FFI()
        self.cffi.cdef(CONTROLS_H.read_text())
        self.ctl = self.cffi.dlopen(str(path))

    def reset(self) -> None:
        self.ctl.ovd_reset()
        self.ctl.ovd_clear_thread_log()

    def live(self, kind: Optional[str] = None) -> int:
        return int(self.ctl.ovd_live(self.cffi.NULL if kind is None else kind.encode()))

    def fail(self, name: str, status: int, after: int = 0) -> None:
        self.ctl.ovd_fail(name.encode(), status, after)

    def reply(self, text: str) -> None:
        self.ctl.ovd_set_reply(text.encode("utf-8"))

    def delay(self, us: int) -> None:
        self.ctl.ovd_set_token_delay_us(us)

    def chat_size(self, pipe: Any) -> int:
        return int(self.ctl.ovd_chat_size(pipe._state.handle))

    def thread_log(self) -> List[tuple]:
        n = self.ctl.ovd_thread_log(self.cffi.NULL, 0)
        buf = self.cffi.new("char[]", n)
        self.ctl.ovd_thread_log(buf, n)
        rows = []
        for line in self.cffi.string(buf).decode().splitlines():
            op, serial, tid = line.split()
            rows.append((op, int(serial), int(tid)))
        return rows


def bundled_library_path() -> Optional[Path]:
    env = os.environ.get("OVGENAI_C_BUNDLED")
    if env and Path(env).is_file():
        return Path(env)
    for cand in BUNDLED_CANDIDATES:
        if cand.is_file():
            return cand
    return None


def make_model_dir(path: Path) -> Path:
    """A folder that passes the binding's model checks (the double does not read the files)."""
    from ovgenai_c.pipeline import IR_FILES

    path.mkdir(parents=True, exist_ok=True)
    for name in IR_FILES:
        (path / name).write_text("")
    return path


PRELUDE = textwrap.dedent("""
    import sys, os, json
    sys.path.insert(0, {root!r})
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
    src = PRELUDE.format(root=str(ROOT), double=str(double) if double else None, controls=str(CONTROLS_H))
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
