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

