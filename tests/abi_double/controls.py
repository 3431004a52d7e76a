"""Python side of the ABI double's test controls (shared by every test folder that drives the double)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

CONTROLS_H = Path(__file__).resolve().parent / "controls.h"


class Double:
    """The ABI double's library (as an ovgenai_c LoadedLibrary) plus its controls."""

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

    def _two_call(self, fn: Any) -> str:
        n = fn(self.cffi.NULL, 0)
        buf = self.cffi.new("char[]", n)
        fn(buf, n)
        return self.cffi.string(buf).decode()

    def thread_log(self) -> List[tuple]:
        rows = []
        for line in self._two_call(self.ctl.ovd_thread_log).splitlines():
            op, serial, tid = line.split()
            rows.append((op, int(serial), int(tid)))
        return rows

    def properties(self) -> Dict[str, str]:
        text = self._two_call(self.ctl.ovd_last_properties)
        return dict(line.split("=", 1) for line in text.splitlines() if line)


def make_model_dir(path: Path) -> Path:
    """A folder that passes the binding's model checks (the double does not read the files)."""
    from ovgenai_c.pipeline import IR_FILES

    path.mkdir(parents=True, exist_ok=True)
    for name in IR_FILES:
        (path / name).write_text("")
    return path
