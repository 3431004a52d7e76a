"""A streamer's STOP / CANCEL on the bundled backend against GenAI (openvino_genai.LLMPipeline, the oracle) on
the same IR and the same attention backend: the list of chunks the streamer received (including the text the
streamer still held back, which GenAI's TextStreamer.end() flushes after the STOP), the returned text, the
number of generated tokens and, in a chat, the turns that follow."""
from __future__ import annotations

import pytest

from helpers import Config, generate, make_streamer, oracle_pair, perf_dict

og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
pytestmark = pytest.mark.engine_explicit  # runs its engines itself: once per test command

PROMPT = "Write a short poem about the sea."
ENGINES = ("SDPA", "PA")
MAX_NEW = 24


@pytest.fixture(scope="module", params=ENGINES)
def engine(request):
    return request.param


@pytest.fixture(scope="module")
def pipes(api, create_pipe, smol_dir, engine):
    """(bundled pipeline, GenAI oracle) with the same ATTENTION_BACKEND."""
    yield from oracle_pair(api, create_pipe, smol_dir, engine)


def _ours(api, pipe, prompt, k, status):
    chunks = []

    def handler(text):
        chunks.append(text)
        return status if len(chunks) == k else 0

    sc, keep = make_streamer(api, handler)
    ffi, lib = api.ffi, api.lib
    res = ffi.new("ov_genai_decoded_results**")
    cfg = Config(api, max_new_tokens=MAX_NEW)
    st = lib.ov_genai_llm_pipeline_generate(pipe, prompt.encode(), cfg.ptr, sc, res)
    assert st == 0, api.last_error()
    text = api.results_text(res[0])
    n = perf_dict(api, res[0])["num_generated"]
    lib.ov_genai_decoded_results_free(res[0])
    return chunks, text, n


def _oracle(oracle, prompt, k, status):
    chunks = []
    want = og.StreamingStatus.STOP if status == 1 else og.StreamingStatus.CANCEL

    def cb(text):
        chunks.append(text)
        return want if len(chunks) == k else og.StreamingStatus.RUNNING

    r = oracle.generate([prompt], og.GenerationConfig(max_new_tokens=MAX_NEW), streamer=cb)
    return chunks, r.texts[0], r.perf_metrics.get_num_generated_tokens()


@pytest.mark.parametrize("status", [1, 2], ids=["STOP", "CANCEL"])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_stop_and_cancel_match_genai(api, pipes, k, status):
    pipe, oracle = pipes
    ours = _ours(api, pipe, PROMPT, k, status)
    theirs = _oracle(oracle, PROMPT, k, status)
    assert ours == theirs
    chunks, text, n = ours
    assert len(chunks) == k + 1  # the held-back text arrives after the STOP/CANCEL (this prompt has some)
    assert n < MAX_NEW


@pytest.mark.parametrize("status", [1, 2], ids=["STOP", "CANCEL"])
@pytest.mark.parametrize("k", [1, 4])
def test_stop_and_cancel_in_chat_match_genai(api, pipes, k, status):
    """STOP keeps the turn (with its text as returned), CANCEL drops it: the next turns equal GenAI's."""
    pipe, oracle = pipes
    lib = api.lib
    assert lib.ov_genai_llm_pipeline_start_chat(pipe) == 0
    oracle.start_chat()
    try:
        plain = Config(api, max_new_tokens=MAX_NEW)
        first = "Hi, I am Ann. I like the sea."
        assert generate(api, pipe, first, plain).text == oracle.generate([first], max_new_tokens=MAX_NEW).texts[0]
        assert _ours(api, pipe, PROMPT, k, status) == _oracle(oracle, PROMPT, k, status)
        for follow_up in ("What is my name?", "And what do I like?"):
            r = generate(api, pipe, follow_up, plain, want_perf=True)
            o = oracle.generate([follow_up], max_new_tokens=MAX_NEW)
            assert r.text == o.texts[0]
            assert r.perf["num_input"] == o.perf_metrics.get_num_input_tokens()
    finally:
        assert lib.ov_genai_llm_pipeline_finish_chat(pipe) == 0
        oracle.finish_chat()
