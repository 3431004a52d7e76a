from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


from abi_double.controls import Double, make_model_dir


@pytest.fixture(scope="session")
def double_session(double_lib_path) -> Double:
    return Double(double_lib_path)


@pytest.fixture
def double(double_session) -> Double:
    double_session.reset()
    yield double_session
    double_session.reset()


@pytest.fixture
def model_dir(tmp_path) -> Path:
    """A folder that passes the binding's model checks (the double does not read the files)."""
    return make_model_dir(tmp_path / "model")


@pytest.fixture
def make_pipe(double, model_dir):
    import ovgenai_c

    made = []

    def _make(**kw: Any) -> "ovgenai_c.LLMPipeline":
        p = ovgenai_c.LLMPipeline(model_dir, "CPU", library=double.library, **kw)
        made.append(p)
        return p

    yield _make
    for p in made:
        p.close()


@pytest.fixture(scope="session")
def bundled_path() -> str:
    """The bundled backend the binding's own loader would find (skips when it is not built)."""
    from ovgenai_c import _loader

    p = next((p for p in _loader.bundled_candidates() if p.is_file()), None)
    if p is None:
        pytest.skip("bundled backend not built")
    return str(p)
