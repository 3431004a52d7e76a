"""Fixtures for the CLI tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from cli_helpers import cli_env, make_ir


@pytest.fixture
def env(double_lib_path, tmp_path):
    return cli_env(double_lib_path, tmp_path)


@pytest.fixture
def model(tmp_path) -> Path:
    return make_ir(tmp_path / "model")
