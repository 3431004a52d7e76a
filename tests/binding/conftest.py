from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ovgenai_c import _loader
from ovgenai_c.pipeline import IR_FILES

CONTROLS_H = Path(__file__).resolve().parents[1] / "abi_double" / "controls.h"


class Double:
    """The ABI double's library plus its test controls."""

    def __init__(self, path: Path) -> None:
        import cffi

        self.path = path
        self.library = _loader.open_library(str(path))
        self.cffi = cffi.FFI()
        self.cffi.cdef(CONTROLS_H.read_text())
        self.ctl = self.cffi.dlopen(str(path))

    def reset(self) -> None:
        self.ctl.ovd_reset()
        self.ctl.ovd_clear_thread_log()

    def live(self, kind: str = None) -> int:
        return int(self.ctl.ovd_live(self.cffi.NULL if kind is None else kind.encode()))

    def thread_log(self) -> List[tuple]:
        n = self.ctl.ovd_thread_log(self.cffi.NULL, 0)
        buf = self.cffi.new("char[]", n)
        self.ctl.ovd_thread_log(buf, n)
        rows = []
        for line in self.cffi.string(buf).decode().splitlines():
            op, serial, tid = line.split()
            rows.append((op, int(serial), int(tid)))
        return rows

    def properties(self) -> Dict[str, str]:
        n = self.ctl.ovd_last_properties(self.cffi.NULL, 0)
        buf = self.cffi.new("char[]", n)
        self.ctl.ovd_last_properties(buf, n)
        text = self.cffi.string(buf).decode()
        return dict(line.split("=", 1) for line in text.splitlines() if line)

    def fail(self, name: str, status: int, after: int = 0) -> None:
        self.ctl.ovd_fail(name.encode(), status, after)

    def reply(self, text: str) -> None:
        self.ctl.ovd_set_reply(text.encode("utf-8"))


@pytest.fixture(scope="session")
def double_session(double_lib_path) -> Double:
    return Double(double_lib_path)


@pytest.fixture
def double(double_session) -> Double:
    double_session.reset()
    yield double_session
    double_session.reset()


@pytest.fixture
def model_dir(tmp_path) -> Path:
    """A folder that passes the binding's model checks (the double does not read the files)."""
    d = tmp_path / "model"
    d.mkdir()
    for name in IR_FILES:
        (d / name).write_text("")
    return d


@pytest.fixture
def make_pipe(double, model_dir):
    import ovgenai_c

    made = []

    def _make(**kw: Any) -> "ovgenai_c.LLMPipeline":
        p = ovgenai_c.LLMPipeline(model_dir, "CPU", library=double.library, **kw)
        made.append(p)
        return p

    yield _make
    for p in made:
        p.close()
