"""GenerationConfig.apply_chat_template = False through the bundled extra
(ovgenai_c_bundled_generation_config_set_apply_chat_template) against GenAI (openvino_genai, the oracle) on the
same IR and ATTENTION_BACKEND: the prompt is tokenised as it is, with special tokens added."""
from __future__ import annotations

import pytest

from helpers import Config, generate, oracle_pair

og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
pytestmark = pytest.mark.engine_explicit  # runs its engines itself: once per test command


@pytest.fixture(scope="module", params=("SDPA", "PA"))
def pair(api, create_pipe, smol_dir, request):
    yield from oracle_pair(api, create_pipe, smol_dir, request.param)


def test_apply_chat_template_false_matches_genai(api, pair):
    pipe, oracle = pair
    ffi, lib = api.ffi, api.lib
    cfg = Config(api, max_new_tokens=12)
    flag = ffi.new("int*")
    assert lib.ovgenai_c_bundled_generation_config_get_apply_chat_template(cfg.ptr, flag) == 0 and flag[0] == 1
    assert lib.ovgenai_c_bundled_generation_config_set_apply_chat_template(cfg.ptr, 0) == 0
    assert lib.ovgenai_c_bundled_generation_config_get_apply_chat_template(cfg.ptr, flag) == 0 and flag[0] == 0
    for prompt in ("The capital of France is", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"):
        r = generate(api, pipe, prompt, cfg, want_perf=True)
        o = oracle.generate([prompt], og.GenerationConfig(max_new_tokens=12, apply_chat_template=False))
        assert r.text == o.texts[0]
        assert r.perf["num_input"] == o.perf_metrics.get_num_input_tokens()
    templated = generate(api, pipe, "The capital of France is", Config(api, max_new_tokens=12)).text
    assert templated != generate(api, pipe, "The capital of France is", cfg).text


def test_apply_chat_template_is_ignored_in_a_chat_like_genai(api, pair):
    pipe, oracle = pair
    lib = api.lib
    cfg = Config(api, max_new_tokens=12)
    assert lib.ovgenai_c_bundled_generation_config_set_apply_chat_template(cfg.ptr, 0) == 0
    assert lib.ov_genai_llm_pipeline_start_chat(pipe) == 0
    oracle.start_chat()
    try:
        for q in ("Hi, I am Ann.", "What is my name?"):
            o = oracle.generate([q], og.GenerationConfig(max_new_tokens=12, apply_chat_template=False))
            assert generate(api, pipe, q, cfg).text == o.texts[0]
    finally:
        assert lib.ov_genai_llm_pipeline_finish_chat(pipe) == 0
        oracle.finish_chat()


def test_apply_chat_template_setter_null(api):
    assert api.lib.ovgenai_c_bundled_generation_config_set_apply_chat_template(api.ffi.NULL, 0) != 0
    cfg = Config(api)
    assert api.lib.ovgenai_c_bundled_generation_config_get_apply_chat_template(cfg.ptr, api.ffi.NULL) != 0
