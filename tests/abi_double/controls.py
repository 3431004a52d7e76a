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


# a Whisper model's generation_config.json in the shape optimum exports (the double reads it; so does the binding)
WHISPER_GENERATION_CONFIG = {
    "eos_token_id": 50257, "max_length": 448, "is_multilingual": True, "pad_token_id": 50257,
    "decoder_start_token_id": 50258, "no_timestamps_token_id": 50363, "prev_sot_token_id": 50361,
    "max_initial_timestamp_index": 50, "begin_suppress_tokens": [220, 50257], "suppress_tokens": [1, 2, 7, 8],
    "lang_to_id": {"<|en|>": 50259, "<|de|>": 50261, "<|fr|>": 50265},
    "task_to_id": {"transcribe": 50359, "translate": 50358}, "alignment_heads": [[1, 0], [2, 3]],
}


def make_whisper_dir(path: Path, generation_config: Optional[Dict[str, Any]] = None) -> Path:
    """A folder that passes the binding's Whisper model checks, with a generation_config.json the double reads."""
    import json

    from ovgenai_c.whisper_pipeline import WHISPER_IR

    path.mkdir(parents=True, exist_ok=True)
    for stem in WHISPER_IR:
        for ext in (".xml", ".bin"):
            (path / f"{stem}{ext}").write_text("")
    config = WHISPER_GENERATION_CONFIG if generation_config is None else generation_config
    (path / "generation_config.json").write_text(json.dumps(config))
    return path
