"""Fixtures of the server tests: skipped without the serve extra or the bundled backend."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parents[2]
TINY_IR = ROOT / "tests" / "fixtures" / "tiny" / "ir"


@pytest.fixture(scope="session")
def bundled():
    from testsupport import open_bundled_or_skip

    return open_bundled_or_skip()


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory) -> Path:
    """A models root holding copies of the tiny fixture model as ``tiny`` and ``other/tiny`` (copies: the catalog
    refuses symlinks that leave the root)."""
    root = tmp_path_factory.mktemp("models")
    shutil.copytree(TINY_IR, root / "tiny")
    shutil.copytree(TINY_IR, root / "other" / "tiny")
    return root


@pytest.fixture(scope="module")
def tiny_server(bundled, tiny_root):
    """A server on 127.0.0.1 with the tiny model as its default (one per module), e.g. standing in for a remote
    OpenAI-compatible endpoint."""
    from ovgenai_c.serve import ServeConfig, create_app
    from serve_helpers import ServerThread

    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", max_queue=8)
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_device_env(monkeypatch):
    monkeypatch.delenv("OVGENAI_DEVICE", raising=False)
    monkeypatch.delenv("OVGENAI_C_API_KEY", raising=False)
