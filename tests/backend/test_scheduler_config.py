"""SchedulerConfig on the bundled PagedAttention engine: the OVGENAI_C_* create properties that
ovgenai_c.scheduler.scheduler_properties sends, against openvino_genai.LLMPipeline(..., scheduler_config=same).

Chunked prefill (max_num_batched_tokens with dynamic_split_fuse) changes the numerics, so token-exactness on
a prompt longer than one chunk is a real check that the chunks are the same as GenAI's."""
from __future__ import annotations

import sys

import pytest

from helpers import Config, generate, owned_pipe
from ovgenai_c import scheduler as sched  # pure Python: loads nothing native
from testsupport import PRECISION_HINT  # oracle and bundled under one precision (issue 11)

pytestmark = pytest.mark.engine_explicit  # PA only, whatever the default engine: once per test command

LONG_PROMPT = ("Summarise the following notes in one sentence. " +
               " ".join(f"Note {i}: the {w} crossed the river at dawn and counted {i * 7} stones."
                        for i, w in enumerate(["fox", "heron", "otter", "wolf", "lynx", "crane", "badger", "stag",
                                               "hare", "owl", "boar", "mole", "newt", "kite", "vole", "wren",
                                               "toad", "seal", "swan", "mink"] * 2))
               )


@pytest.fixture(scope="module")
def og():
    return pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")


def _pair(api, create_pipe, og, smol_dir, **fields):
    """(bundled pipe owner generator, oracle) for the same SchedulerConfig fields."""
    ours = sched.SchedulerConfig(**fields)
    props = [s for kv in sched.scheduler_properties(ours, "bundled") for s in kv]
    theirs = og.SchedulerConfig()
    for k, v in fields.items():
        setattr(theirs, k, v)
    oracle = og.LLMPipeline(str(smol_dir), "CPU", **PRECISION_HINT, scheduler_config=theirs)
    return owned_pipe(api, create_pipe, smol_dir, *props), oracle


def test_long_prompt_is_chunked_as_genai_default_scheduler_config(api, create_pipe, og, smol_dir, oracle_tokenizer_smol):
    n = len(oracle_tokenizer_smol.encode(LONG_PROMPT).input_ids.data[0])
    assert n > 2 * 256, n  # at least three chunks of the default max_num_batched_tokens
    gen, oracle = _pair(api, create_pipe, og, smol_dir)
    pipe = next(gen)
    try:
        for p in (LONG_PROMPT, LONG_PROMPT[:700]):
            r = generate(api, pipe, p, Config(api, max_new_tokens=30), want_perf=True)
            assert r.status == 0, api.last_error()
            o = oracle.generate([p], max_new_tokens=30)
            assert r.text == o.texts[0]
            assert r.perf["num_input"] == o.perf_metrics.get_num_input_tokens()
    finally:
        next(gen, None)


@pytest.mark.parametrize("chunk", [8, 256])
def test_chunk_size_shows_in_beam_scores_as_in_genai(api, create_pipe, og, smol_dir, chunk):
    """Greedy text rarely moves with the chunking, the beam scores do (GenAI's own scores differ between
    max_num_batched_tokens 8, 256 and unlimited on this prompt): "score: text" lines equal to 6 decimals
    check that the prefill chunks are GenAI's."""
    gen, oracle = _pair(api, create_pipe, og, smol_dir, max_num_batched_tokens=chunk)
    pipe = next(gen)
    try:
        fields = dict(max_new_tokens=20, num_beams=3, num_return_sequences=3)
        r = generate(api, pipe, LONG_PROMPT, Config(api, **fields))
        assert r.status == 0, api.last_error()
        o = oracle.generate([LONG_PROMPT], **fields)
        assert r.text == "\n".join(f"{s:f}: {t}" for s, t in zip(o.scores, o.texts))
    finally:
        next(gen, None)


def test_benchmark_genai_settings_unlimited_batch_no_prefix_cache(api, create_pipe, og, smol_dir):
    """upstream's benchmark_genai sample: max_num_batched_tokens=sys.maxsize, enable_prefix_caching=False;
    the same prompt twice (no reuse: the second answer is computed from scratch) and a shared-prefix prompt."""
    gen, oracle = _pair(api, create_pipe, og, smol_dir, max_num_batched_tokens=sys.maxsize,
                        enable_prefix_caching=False)
    pipe = next(gen)
    try:
        for p in (LONG_PROMPT, LONG_PROMPT, LONG_PROMPT[:500] + " Answer in French.", "Why is the sky blue?"):
            r = generate(api, pipe, p, Config(api, max_new_tokens=25))
            assert r.status == 0, api.last_error()
            assert r.text == oracle.generate([p], max_new_tokens=25).texts[0]
    finally:
        next(gen, None)


def test_prefix_caching_over_requests_sharing_a_prefix(api, create_pipe, og, smol_dir):
    gen, oracle = _pair(api, create_pipe, og, smol_dir, enable_prefix_caching=True)
    pipe = next(gen)
    try:
        base = LONG_PROMPT[:900]
        for p in (base, base + " Reply with a list.", base + " Reply with a list.", base[:400]):
            r = generate(api, pipe, p, Config(api, max_new_tokens=25))
            assert r.status == 0, api.last_error()
            assert r.text == oracle.generate([p], max_new_tokens=25).texts[0]
    finally:
        next(gen, None)


def test_request_that_does_not_fit_the_kv_pool_fails_with_the_numbers(api, create_pipe, og, smol_dir):
    gen, oracle = _pair(api, create_pipe, og, smol_dir, num_kv_blocks=2)
    pipe = next(gen)
    try:
        with pytest.raises(RuntimeError, match="did not fit"):
            oracle.generate("Hi", max_new_tokens=100, ignore_eos=True)
        r = generate(api, pipe, "Hi", Config(api, max_new_tokens=100, ignore_eos=True))
        assert r.status != 0
        err = api.last_error()
        assert "did not fit in the KV cache" in err and "2 blocks of 32 tokens" in err, err
        # a request that fits still works afterwards, and equals GenAI's
        r = generate(api, pipe, "Hi", Config(api, max_new_tokens=10))
        assert r.status == 0, api.last_error()
        assert r.text == oracle.generate(["Hi"], max_new_tokens=10).texts[0]
    finally:
        next(gen, None)


def test_no_split_fuse_refuses_a_prompt_longer_than_the_batch(api, create_pipe, smol_dir):
    props = sched.scheduler_properties(
        sched.SchedulerConfig(dynamic_split_fuse=False, max_num_batched_tokens=16, max_num_seqs=8), "bundled")
    gen = owned_pipe(api, create_pipe, smol_dir, *[s for kv in props for s in kv])
    pipe = next(gen)
    try:
        r = generate(api, pipe, "word " * 40, Config(api, max_new_tokens=5))
        assert r.status != 0
        assert "is longer than max number of tokens in batch (16)" in api.last_error()
    finally:
        next(gen, None)


@pytest.mark.parametrize("key,value", [("OVGENAI_C_MAX_NUM_BATCHED_TOKENS", "-1"),
                                       ("OVGENAI_C_ENABLE_PREFIX_CACHING", "maybe"),
                                       ("OVGENAI_C_NO_SUCH_KEY", "1")])
def test_bad_scheduler_property_is_refused_at_create(api, create_pipe, tiny_dir, key, value):
    st, pipe = create_pipe(tiny_dir, key, value)
    assert st != 0 and pipe == api.ffi.NULL
    assert key in api.last_error()


def test_scheduler_keys_select_pa_over_sdpa(api, create_pipe, tiny_dir):
    """scheduler_config selects PagedAttention in GenAI even with ATTENTION_BACKEND=SDPA: a 1-block pool
    proves the PA engine runs (SDPA has no block pool to overflow)."""
    gen = owned_pipe(api, create_pipe, tiny_dir, "ATTENTION_BACKEND", "SDPA", "OVGENAI_C_NUM_KV_BLOCKS", "1")
    pipe = next(gen)
    try:
        r = generate(api, pipe, "Hello", Config(api, max_new_tokens=60, ignore_eos=True))
        assert r.status != 0 and "did not fit in the KV cache" in api.last_error()
    finally:
        next(gen, None)


def test_llm_pipeline_scheduler_config_keyword_end_to_end(og, smol_dir):
    """ovgenai_c.LLMPipeline(path, "CPU", scheduler_config=...) as upstream's benchmark_genai sample builds it,
    with ATTENTION_BACKEND=SDPA also given (scheduler_config wins, as in GenAI)."""
    import ovgenai_c

    cfg = ovgenai_c.SchedulerConfig()
    cfg.enable_prefix_caching = False
    cfg.max_num_batched_tokens = 16
    theirs = og.SchedulerConfig()
    theirs.enable_prefix_caching = False
    theirs.max_num_batched_tokens = 16
    oracle = og.LLMPipeline(str(smol_dir), "CPU", **PRECISION_HINT, scheduler_config=theirs)
    with ovgenai_c.LLMPipeline(str(smol_dir), "CPU", scheduler_config=cfg, **PRECISION_HINT, ATTENTION_BACKEND="SDPA") as pipe:
        assert pipe.properties["OVGENAI_C_MAX_NUM_BATCHED_TOKENS"] == "16"
        assert pipe.properties["ATTENTION_BACKEND"] == "PA"
        for p in (LONG_PROMPT[:600], "Why is the sky blue?"):
            assert str(pipe.generate(p, max_new_tokens=20)) == oracle.generate([p], max_new_tokens=20).texts[0]
    with pytest.raises(ovgenai_c.NotSupportedError, match="use_cache_eviction"):
        ovgenai_c.LLMPipeline(str(smol_dir), "CPU", scheduler_config=ovgenai_c.SchedulerConfig(use_cache_eviction=True))


@pytest.mark.parametrize("fields", [dict(do_sample=True, num_return_sequences=4, rng_seed=1),
                                    dict(num_beams=4, num_return_sequences=2)])
def test_more_sequences_than_the_batch_is_dropped_as_in_genai(api, create_pipe, og, smol_dir, fields):
    gen, oracle = _pair(api, create_pipe, og, smol_dir, max_num_batched_tokens=2)
    pipe = next(gen)
    try:
        with pytest.raises(RuntimeError, match="did not fit"):
            oracle.generate(["Hi there"], max_new_tokens=5, **fields)
        r = generate(api, pipe, "Hi there", Config(api, max_new_tokens=5, **fields))
        assert r.status != 0
        assert "need more than SchedulerConfig max_num_batched_tokens (2)" in api.last_error()
        r = generate(api, pipe, "Hi there", Config(api, max_new_tokens=5))  # one sequence fits: 2-token chunks
        assert r.status == 0, api.last_error()
        assert r.text == oracle.generate(["Hi there"], max_new_tokens=5).texts[0]
    finally:
        next(gen, None)
