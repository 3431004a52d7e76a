"""Fixtures of the binding tests (the double, model_dir and make_pipe come from tests/conftest.py)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def bundled_path() -> str:
    """The bundled backend the binding's own loader would find (skips when it is not built)."""
    from ovgenai_c import _loader

    p = next((p for p in _loader.bundled_candidates() if p.is_file()), None)
    if p is None:
        pytest.skip("bundled backend not built")
    return str(p)
