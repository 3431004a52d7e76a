"""Helpers for the CLI tests: run ``python -m ovgenai_c`` in a subprocess against the ABI double."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

from testsupport import CHATML, make_ir  # noqa: F401  (the one copy: tests/testsupport.py)

ROOT = Path(__file__).resolve().parents[2]
CONTROLS_H = ROOT / "tests" / "abi_double" / "controls.h"


def cli_env(library: Path, tmp: Path, **extra: str) -> Dict[str, str]:
    env = dict(os.environ)
    for k in ("OVGENAI_DEVICE", "OPENVINO_GENAI_DIR", "OVGENAI_C_MODELS"):
        env.pop(k, None)
    env.update({
        "OVGENAI_C_LIBRARY": str(library),
        "OVGENAI_C_CACHE": str(tmp / "cache"),
        "PYTHONPATH": str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
        "PYTHONUNBUFFERED": "1",
        "OVGENAI_C_SERVER": "off",  # hermetic: never a developer's running `ovgenai-c serve` (tests pass --server)
    })
    env.update(extra)
    return env


def run_cli(env: Dict[str, str], *args: str, input: Optional[str] = None, timeout: float = 60,
            cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ovgenai_c", *args], env=env, input=input, text=True,
                          capture_output=True, timeout=timeout, cwd=str(cwd or ROOT))


# Runs the CLI after setting the double's controls (the controls are per process, so they are set in the child).
# With OVD_LOG_INPUTS=<file>, every pipeline input (prompt str or messages) is appended to <file> as a JSON line;
# with OVD_LOG_CREATE=<file>, every pipeline creation (path, device, properties).
DRIVER = r"""
import json, os, sys, cffi
ffi = cffi.FFI(); ffi.cdef(open(sys.argv[1]).read()); ctl = ffi.dlopen(sys.argv[2])
ctl.ovd_set_token_delay_us(int(sys.argv[3]))
if os.environ.get("OVD_REPLY"):  # the text every answer gives (instead of echoing the prompt)
    ctl.ovd_set_reply(os.environ["OVD_REPLY"].encode())
if os.environ.get("OVD_FAIL"):  # name:status:after_calls
    name, status, after = os.environ["OVD_FAIL"].split(":")
    ctl.ovd_fail(name.encode(), int(status), int(after))
log = os.environ.get("OVD_LOG_INPUTS")
if log:
    from ovgenai_c.pipeline import LLMPipeline
    def wrap(name):
        orig = getattr(LLMPipeline, name)
        def f(self, inputs, *a, **kw):
            with open(log, "a") as fh:
                line = inputs if isinstance(inputs, str) else inputs.get_messages()
                if os.environ.get("OVD_LOG_EXTRA") and not isinstance(inputs, str):  # with the template's context
                    line = {"messages": line, "extra": inputs.get_extra_context()}
                fh.write(json.dumps(line) + "\n")
            return orig(self, inputs, *a, **kw)
        setattr(LLMPipeline, name, f)
    wrap("stream"); wrap("generate")
if os.environ.get("OVD_LOG_CREATE"):  # every pipeline creation: its device and properties, as a JSON line
    from ovgenai_c.pipeline import LLMPipeline
    orig_init = LLMPipeline.__init__
    def init(self, path, device="CPU", *a, **kw):
        with open(os.environ["OVD_LOG_CREATE"], "a") as fh:
            props = {k: str(v) for k, v in kw.items() if k != "library"}
            fh.write(json.dumps({"path": str(path), "device": device, "properties": props}) + "\n")
        return orig_init(self, path, device, *a, **kw)
    LLMPipeline.__init__ = init
if os.environ.get("OVD_DEFAULT_MODEL"):  # stand-in for the fetched default model; records the format asked for
    import ovgenai_c.models as m
    def fake_default(fmt="ir", progress=True):
        with open(os.environ["OVD_DEFAULT_MODEL"] + ".asked", "a") as fh:
            fh.write(fmt + "\n")
        return os.environ["OVD_DEFAULT_MODEL"]
    m.ensure_default_model = fake_default
from ovgenai_c.cli import main
sys.exit(main(sys.argv[4:]))
"""


def driver_args(library: Path, delay_us: int, *cli_args: str) -> list:
    return [sys.executable, "-c", DRIVER, str(CONTROLS_H), str(library), str(delay_us), *cli_args]
