"""The test run keeps its temporary files in one folder of its own (tests/conftest.py): removed when the run passes,
kept and named when it fails. Without it every run of the test command left hundreds of model folders (the
reliability scripts' `tempfile.mkdtemp()`) and the benchmark's scratch folders in /tmp."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

PROBE = """
import subprocess, sys, tempfile

def test_makes_temporary_files():
    tempfile.mkdtemp()  # in this process
    subprocess.run([sys.executable, "-c", "import tempfile; tempfile.mkdtemp()"], check=True)  # in a child

def test_outcome():
    assert {ok}
"""


def test_this_run_has_its_own_temporary_folder():
    run_tmp = Path(tempfile.gettempdir())
    assert run_tmp.name.startswith("ovgenai_c-tests-") and os.environ["TMPDIR"] == str(run_tmp)
    child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == str(run_tmp)


def _run_probe(tmp_path: Path, ok: bool) -> tuple[subprocess.CompletedProcess, Path]:
    outer = tmp_path / ("outer-ok" if ok else "outer-failed")
    outer.mkdir()
    probe = tmp_path / f"probe_{'ok' if ok else 'failed'}" / "test_probe.py"
    probe.parent.mkdir()
    probe.write_text(PROBE.format(ok=ok))
    env = dict(os.environ, TMPDIR=str(outer), PYTHONPATH=str(TESTS))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                           str(probe)], capture_output=True, text=True, timeout=120, env=env, cwd=str(probe.parent))
    return proc, outer


def test_a_passing_run_leaves_nothing(tmp_path):
    proc, outer = _run_probe(tmp_path, ok=True)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert list(outer.iterdir()) == []  # nothing the run, its tests or their children made is left


def test_a_failing_run_keeps_its_files_and_says_where(tmp_path):
    proc, outer = _run_probe(tmp_path, ok=False)
    assert proc.returncode == 1, proc.stdout[-2000:]
    (kept,) = list(outer.iterdir())
    assert kept.name.startswith("ovgenai_c-tests-")
    assert f"temporary files of this run kept in {kept}" in proc.stdout
    made = [p for p in kept.iterdir() if p.name.startswith("tmp")]
    assert len(made) == 2, list(kept.iterdir())  # the test's folder and its child's
