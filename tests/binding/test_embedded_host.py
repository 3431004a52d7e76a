"""Embedded Python: a C host that initialises CPython, runs ovgenai_c, finalises the interpreter, and does it again
in the same process — as applications that embed Python do —, or runs it in one sub-interpreter after another. Each
round makes a pipeline on the bundled backend, generates, and leaves a stream in flight and the pipeline open for
the (sub-)interpreter's end."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from typing import Any, Dict, List
from pathlib import Path

import pytest

from testsupport import native_unit

HERE = Path(__file__).resolve().parent
TINY = HERE.parent / "fixtures" / "tiny" / "ir"

pytestmark = pytest.mark.skipif(sys.implementation.name != "cpython" or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                                reason="needs a CPython built with its shared library (libpython) to embed")

ROUND = """
import json, sys
import ovgenai_c
p = ovgenai_c.LLMPipeline({model!r}, "CPU", library={library!r})
text = str(p.generate("hello there", max_new_tokens=6))
it = p.stream("tell me more", max_new_tokens=500, ignore_eos=True)
next(it)
print("ROUND " + json.dumps({{"text": text, "eos": p.get_generation_config().eos_token_id,
                              "numpy": "numpy" in sys.modules}}), flush=True)
"""


def _host() -> Path:
    libdir = sysconfig.get_config_var("LIBDIR")
    lib = f"python{sysconfig.get_config_var('LDVERSION') or sysconfig.get_python_version()}"
    return native_unit("embedded_host", [str(HERE / "embedded_host.c"),
                                         f"-I{sysconfig.get_paths()['include']}", f"-L{libdir}", f"-l{lib}",
                                         f"-Wl,-rpath,{libdir}"],
                       [HERE / "embedded_host.c"], salt=f"{sys.version} {libdir}")


def _run_host(bundled_path: str, *mode: str) -> List[Dict[str, Any]]:
    """The host's three rounds (ROUND lines), once it exited cleanly with no Python error on its stderr."""
    env = dict(os.environ)
    env["PYTHONHOME"] = sys.base_prefix  # the host is not python3: tell it where the standard library is
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # this interpreter's packages and sources
    proc = subprocess.run([str(_host()), ROUND.format(model=str(TINY), library=bundled_path), "3", *mode],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    assert "Fatal Python error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    rounds = [json.loads(line[len("ROUND "):]) for line in proc.stdout.splitlines() if line.startswith("ROUND ")]
    assert len(rounds) == 3, proc.stdout
    assert all(r == rounds[0] for r in rounds), rounds  # the same answer from each (sub-)interpreter
    assert rounds[0]["text"] and rounds[0]["eos"] == 2  # (the tiny tokenizer's eos, read from its files)
    return rounds


def test_pipelines_in_sub_interpreters_one_after_another(bundled_path):
    """Py_NewInterpreter / Py_EndInterpreter (shared GIL): each sub-interpreter's exit hook cancels its stream and
    frees its pipeline, so its owner thread is gone before the sub-interpreter ends."""
    _run_host(bundled_path, "sub")


def test_pipelines_in_an_interpreter_initialised_and_finalised_three_times(bundled_path):
    """Regression: the second round failed — a pipeline built a Tokenizer for the model's eos token (the default
    model has no generation_config.json), which imports numpy, and numpy cannot be loaded twice in one process."""
    rounds = _run_host(bundled_path)
    assert not rounds[0]["numpy"]  # generating text does not need numpy
