"""The PagedAttention engine's prefix cache after a beam search. The beams' cache is dropped down to the prompt,
and a later request on the same prompt reuses what is left: that must give the same logits as computing the
prompt afresh, so the request is token- (and score-) exact with a fresh pipeline and with GenAI doing the same
calls. The prompt's partly filled last block is not reusable there: the beams wrote into it, and in the CPU
plugin's u8 KV cache that changes the prompt's entries too (the repeat of the prompt used to differ from a fresh
pipeline). The prompt's whole blocks stay reused."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import Config, generate
from testsupport import PRECISION_HINT

og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
ov = pytest.importorskip("openvino", exc_type=ImportError)
pytestmark = pytest.mark.engine_explicit  # PA only (the stateful engine keeps nothing between requests)

PROMPT = "Write a short poem about the sea."
BEAMS = dict(max_new_tokens=8, num_beams=4, num_return_sequences=2)
AFTER = {
    "greedy": dict(max_new_tokens=16),
    "beams": BEAMS,
    "seeded": dict(max_new_tokens=16, do_sample=True, temperature=0.9, rng_seed=3, num_return_sequences=2),
}


def _string_form(res):
    """ov_genai_decoded_results_get_string's form: the text alone, or "score: text" lines."""
    if len(res.texts) == 1:
        return res.texts[0]
    return "\n".join(f"{s:f}: {t}" for s, t in zip(res.scores, res.texts))


def _pa(api, create_pipe, smol_dir, *props):
    st, pipe = create_pipe(smol_dir, "ATTENTION_BACKEND", "PA", *props)
    assert st == 0, api.last_error()
    return pipe


def _ours(api, pipe, prompt, fields):
    r = generate(api, pipe, prompt, Config(api, **fields))
    assert r.status == 0, api.last_error()
    return r.text


def _oracle(smol_dir):
    return og.LLMPipeline(str(smol_dir), "CPU", **PRECISION_HINT)  # GenAI's default CPU pipeline: PA, prefix cache on


@pytest.mark.parametrize("after", list(AFTER))
def test_repeat_of_the_prompt_after_beams_is_a_fresh_pipelines(api, create_pipe, smol_dir, after):
    """greedy, beams, then `after` on the same prompt: as `after` on a fresh pipeline, and as GenAI's third call."""
    fields = AFTER[after]
    fresh = _pa(api, create_pipe, smol_dir)
    try:
        want = _ours(api, fresh, PROMPT, fields)
    finally:
        api.lib.ov_genai_llm_pipeline_free(fresh)
    pipe = _pa(api, create_pipe, smol_dir)
    try:
        _ours(api, pipe, PROMPT, dict(max_new_tokens=16))
        _ours(api, pipe, PROMPT, BEAMS)
        got = _ours(api, pipe, PROMPT, fields)
    finally:
        api.lib.ov_genai_llm_pipeline_free(pipe)
    oracle = _oracle(smol_dir)
    oracle.generate([PROMPT], max_new_tokens=16)
    oracle.generate([PROMPT], og.GenerationConfig(**BEAMS))
    theirs = _string_form(oracle.generate([PROMPT], og.GenerationConfig(**fields)))
    assert got == want
    assert got == theirs


def _tokens(api, pipe, ids, fields):
    """ovgenai_c_bundled_llm_pipeline_generate_tokens: the generated ids of sequence 0."""
    ffi, lib = api.ffi, api.lib
    res = ffi.new("ov_genai_decoded_results**")
    cfg = Config(api, **fields)  # alive until the call returns (it frees its config)
    st = lib.ovgenai_c_bundled_llm_pipeline_generate_tokens(pipe, ffi.new("int64_t[]", ids), len(ids), ffi.NULL,
                                                            cfg.ptr, ffi.NULL, res)
    assert st == 0, api.last_error()
    try:
        n = ffi.new("size_t*")
        assert lib.ovgenai_c_bundled_decoded_results_get_tokens(res[0], 0, ffi.NULL, n) == 0
        buf = ffi.new("int64_t[]", max(n[0], 1))
        assert lib.ovgenai_c_bundled_decoded_results_get_tokens(res[0], 0, buf, n) == 0
        return [buf[i] for i in range(n[0])]
    finally:
        lib.ov_genai_decoded_results_free(res[0])


def _form_steps(api, pipe):
    one, main = api.ffi.new("size_t*"), api.ffi.new("size_t*")
    assert api.lib.ovgenai_c_bundled_llm_pipeline_get_form_steps(pipe, one, main) == 0, api.last_error()
    return one[0], main[0]


@pytest.mark.parametrize("length", [64, 70])
def test_prompt_blocks_after_beams(api, create_pipe, smol_dir, oracle_tokenizer_smol, length):
    """A prompt of whole 32-token blocks (64) is reused whole after the beams: the repeat feeds only its last
    token, on the one-token form (no main-form inference at all). One with a partly filled last block (70): its
    whole blocks are reused and the 6 tokens of the last block recomputed, in one main-form inference. Either
    way the repeat's tokens are a fresh pipeline's and GenAI's."""
    text = "The quick brown fox jumps over the lazy dog. " * 20
    ids = [int(t) for t in oracle_tokenizer_smol.encode(text, add_special_tokens=False).input_ids.data[0][:length]]
    assert len(ids) == length
    greedy = dict(max_new_tokens=16)
    fresh = _pa(api, create_pipe, smol_dir)
    try:
        want = _tokens(api, fresh, ids, greedy)
    finally:
        api.lib.ov_genai_llm_pipeline_free(fresh)
    pipe = _pa(api, create_pipe, smol_dir, "OVGENAI_C_STATIC_DECODE", "YES")
    try:
        _tokens(api, pipe, ids, BEAMS)
        before = _form_steps(api, pipe)
        got = _tokens(api, pipe, ids, greedy)
        one, main = (a - b for a, b in zip(_form_steps(api, pipe), before))
    finally:
        api.lib.ov_genai_llm_pipeline_free(pipe)
    assert main == (0 if length % 32 == 0 else 1)
    assert one == len(got) - (1 if length % 32 else 0)  # the decode steps (+ the one-token prefill)
    oracle = _oracle(smol_dir)
    x = np.array([ids], dtype=np.int64)
    inputs = og.TokenizedInputs(ov.Tensor(x), ov.Tensor(np.ones_like(x)))
    oracle.generate(inputs, og.GenerationConfig(**BEAMS))
    theirs = [int(t) for t in oracle.generate(inputs, og.GenerationConfig(**greedy)).tokens[0]]
    assert got == want
    assert got == theirs
