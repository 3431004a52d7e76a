"""Shared fixtures: the ABI double, the bundled backend (when built) and the tiny model fixture."""
from __future__ import annotations

import sys
from pathlib import Path

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


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "engine_explicit: the module picks the bundled attention engine(s) itself (both, or PA only), so "
        "the test command's second pass on the SDPA engine skips it (-m 'not engine_explicit')")
