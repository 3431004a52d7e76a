"""The Python streamer after a STOP / CANCEL, on the bundled backend and the real default model, against GenAI
(openvino_genai, the oracle): the text the library flushes after the STOP (GenAI's TextStreamer.end()) reaches
the user's streamer, and chunks and returned text equal GenAI's."""
from __future__ import annotations

import os

import pytest

import ovgenai_c
from testsupport import PRECISION_HINT  # oracle and bundled under one precision (issue 11)

og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")

PROMPT = "Write a short poem about the sea."


@pytest.fixture(scope="module")
def smollm2_ir():
    if os.environ.get("OVGENAI_C_SMOLLM2_IR"):
        return os.environ["OVGENAI_C_SMOLLM2_IR"]
    from ovgenai_c import models

    d = models.default_model_dir() / "ir"
    if not (d / "openvino_model.xml").is_file():
        pytest.skip("default model IR not available")
    return str(d)


@pytest.mark.parametrize("engine", ["SDPA", "PA"])
@pytest.mark.parametrize("status", ["STOP", "CANCEL"])
def test_python_streamer_gets_the_flush_after_stop(smollm2_ir, bundled_path, engine, status):
    k = 2
    ours, theirs = [], []

    def ours_cb(text):
        ours.append(text)
        return getattr(ovgenai_c.StreamingStatus, status) if len(ours) == k else None

    def theirs_cb(text):
        theirs.append(text)
        return getattr(og.StreamingStatus, status) if len(theirs) == k else og.StreamingStatus.RUNNING

    with ovgenai_c.LLMPipeline(smollm2_ir, "CPU", library=bundled_path, **PRECISION_HINT, ATTENTION_BACKEND=engine) as pipe:
        r = pipe.generate(PROMPT, max_new_tokens=24, streamer=ours_cb)
    o = og.LLMPipeline(smollm2_ir, "CPU", **PRECISION_HINT, ATTENTION_BACKEND=engine).generate(
        [PROMPT], og.GenerationConfig(max_new_tokens=24), streamer=theirs_cb)
    assert len(ours) == k + 1  # the held-back text came after the STOP/CANCEL
    assert ours == theirs
    assert str(r) == o.texts[0]
    assert r.finish_reason == status.lower()
