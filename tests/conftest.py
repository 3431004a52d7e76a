"""Shared fixtures: the ABI double (with a model folder it accepts and a pipeline factory on it), the bundled
backend (when built) and the tiny model fixture. Folders add to these (e.g. tests/reliability's leak check on the
double); they do not copy them."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

TINY_IR = TESTS / "fixtures" / "tiny" / "ir"
TINY_GGUF = TESTS / "fixtures" / "tiny" / "tiny.gguf"


@pytest.fixture(scope="session")
def double_lib_path(tmp_path_factory) -> Path:
    from abi_double.build import build_double

    return build_double(tmp_path_factory.mktemp("abi_double"))


@pytest.fixture(scope="session")
def double_session(double_lib_path):
    """The ABI double (abi_double.controls.Double: the library as the binding loads it, plus its controls)."""
    from abi_double.controls import Double

    return Double(double_lib_path)


@pytest.fixture
def double(double_session):
    """The double, reset (faults, reply, delay, thread log) before and after the test; on PyPy what earlier tests
    dropped is collected first (its live-handle counts are the double's, process-wide)."""
    from testsupport import settle_garbage

    settle_garbage()
    double_session.reset()
    yield double_session
    double_session.reset()


@pytest.fixture
def model_dir(tmp_path) -> Path:
    """A folder that passes the binding's model checks (the double does not read the files)."""
    from abi_double.controls import make_model_dir

    return make_model_dir(tmp_path / "model")


@pytest.fixture
def make_pipe(double, model_dir):
    """Factory of ovgenai_c pipelines on the double; all closed at the end of the test (before the double's own
    teardown, so a folder's override of `double` sees them closed)."""
    import ovgenai_c

    made = []

    def _make(**kw: Any) -> "ovgenai_c.LLMPipeline":
        p = ovgenai_c.LLMPipeline(model_dir, "CPU", library=double.library, **kw)
        made.append(p)
        return p

    yield _make
    for p in made:
        p.close()


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler (KeyboardInterrupt) for tests that need Ctrl-C / _thread.interrupt_main():
    under nohup, in some CI runners and in background jobs SIGINT is ignored at start, and then Python installs
    no handler at all and interrupt_main() does nothing. Restored afterwards."""
    import signal

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


_RUN_TMPDIR: dict = {}


def pytest_configure(config) -> None:
    # One temporary folder for the whole run: what this process and its subprocesses (which inherit TMPDIR) make
    # with tempfile -- the reliability scripts' model folders, the benchmark's scratch, pytest's own tmp_path -- is
    # under it, and it is removed when the run passes (kept, and named, when it fails), so repeated runs do not
    # fill the machine's /tmp.
    import tempfile

    run_tmp = tempfile.mkdtemp(prefix="ovgenai_c-tests-")
    _RUN_TMPDIR.update(path=run_tmp, env=os.environ.get("TMPDIR"), tempdir=tempfile.tempdir)
    os.environ["TMPDIR"] = run_tmp
    tempfile.tempdir = run_tmp
    config.addinivalue_line(
        "markers", "engine_explicit: the module picks the bundled attention engine(s) itself (both, or PA only), so "
        "the test command's second pass on the SDPA engine skips it (-m 'not engine_explicit')")
    # start_chat() / finish_chat() warn as openvino_genai 2026.4's do (tests/binding/test_dropin.py checks it);
    # the many tests that chat that way on purpose would otherwise bury real warnings under hundreds of these
    config.addinivalue_line("filterwarnings",
                            r"ignore:start_chat\(\) / finish_chat\(\) API is deprecated:DeprecationWarning")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that compares with openvino_genai in this process cannot use a discovered library of another OpenVINO
    release (e.g. OPENVINO_GENAI_DIR naming a 2026.3 archive beside the 2026.4 wheels): the loader refuses to map the
    second OpenVINO. Such a test is reported as skipped with the loader's reason, not as a failure of the library;
    tests/binding/test_conformance.py checks that library in a process of its own."""
    outcome = yield
    report = outcome.get_result()
    chosen = os.environ.get("OPENVINO_GENAI_DIR") or os.environ.get("OVGENAI_C_LIBRARY")
    if call.excinfo is None or report.outcome != "failed" or not chosen or "openvino_genai" not in sys.modules:
        return  # inert unless a library of the user's choice is tested (never in the test command's own run)
    from ovgenai_c.errors import OpenVINOVersionConflictError

    exc = call.excinfo.value
    while exc is not None and not isinstance(exc, OpenVINOVersionConflictError):
        exc = exc.__cause__ or exc.__context__  # also under pytest.raises, which fails with an AssertionError
    if exc is not None:
        why = str(exc)
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           "Skipped: the discovered library cannot share this process with openvino_genai (the "
                           f"test oracle): it {why[why.index('needs '):].splitlines()[0]}")


def pytest_sessionfinish(session, exitstatus) -> None:
    _RUN_TMPDIR["failed"] = int(exitstatus) not in (0, 5)  # 5: no tests ran (the test command fails that itself)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if int(exitstatus) not in (0, 5) and _RUN_TMPDIR.get("path"):
        terminalreporter.write_line(f"temporary files of this run kept in {_RUN_TMPDIR['path']}")


def pytest_unconfigure(config) -> None:
    import shutil
    import tempfile

    path = _RUN_TMPDIR.pop("path", None)
    if path is None:
        return
    if _RUN_TMPDIR.get("env") is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = _RUN_TMPDIR["env"]
    tempfile.tempdir = _RUN_TMPDIR.get("tempdir")
    if not _RUN_TMPDIR.get("failed", True):
        shutil.rmtree(path, ignore_errors=True)
