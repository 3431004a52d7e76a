"""Fixtures for the provider tests: the ABI double (tests/conftest.py) and model folders it accepts."""
from __future__ import annotations

from pathlib import Path

import pytest

from ovgenai_c.provider import SessionPool
from provider_helpers import make_ir


@pytest.fixture
def ctl(double):
    """The provider tests' name for tests/conftest.py's double (reset before and after)."""
    return double


@pytest.fixture
def model(tmp_path) -> Path:
    return make_ir(tmp_path / "model")


@pytest.fixture(scope="module")
def bundled():
    """The real bundled backend (skips the test when it is not built)."""
    from testsupport import open_bundled_or_skip

    return open_bundled_or_skip(" (ovgenai_c/_bundled/ or native/build/libovgenai_c_bundled.so)")


@pytest.fixture
def pool():
    p = SessionPool()
    yield p
    p.close(timeout=10)


@pytest.fixture(autouse=True)
def _no_device_env(monkeypatch):
    monkeypatch.delenv("OVGENAI_DEVICE", raising=False)
