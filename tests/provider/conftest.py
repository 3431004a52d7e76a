"""Fixtures for the provider tests: the ABI double (with its controls) and model folders it accepts."""
from __future__ import annotations

from pathlib import Path

import pytest

from ovgenai_c.provider import SessionPool
from provider_helpers import Controls, make_ir


@pytest.fixture(scope="session")
def controls_session(double_lib_path) -> Controls:
    return Controls(double_lib_path)


@pytest.fixture
def ctl(controls_session) -> Controls:
    controls_session.reset()
    yield controls_session
    controls_session.reset()


@pytest.fixture
def model(tmp_path) -> Path:
    return make_ir(tmp_path / "model")


@pytest.fixture
def pool():
    p = SessionPool()
    yield p
    p.close(timeout=10)


@pytest.fixture(autouse=True)
def _no_device_env(monkeypatch):
    monkeypatch.delenv("OVGENAI_DEVICE", raising=False)
