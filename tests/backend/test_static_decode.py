"""The PagedAttention engine's static one-token form (OVGENAI_C_STATIC_DECODE): a single sequence's one-token steps
run on the model compiled with static shapes for one token, over the same block caches; every other step (prefill,
several sequences, prompt-lookup verification) on the main, dynamic form. The form only changes which compiled
model runs a step: its logits are bit-identical, so every answer must be the same token for token with it on and
off, under the f32 hint and under the CPU's default precision (bf16 where the CPU has it), for every decoding mode.
Which form ran how many inferences is counted by ovgenai_c_bundled_llm_pipeline_get_form_steps."""
from __future__ import annotations

import pytest

from helpers import Config, generate, owned_pipe
from testsupport import PRECISION_HINT

ovgenai_c = pytest.importorskip("ovgenai_c")
from ovgenai_c.batching import ContinuousBatchingPipeline  # noqa: E402

pytestmark = pytest.mark.engine_explicit  # it picks its engines itself

PROMPT = "Tell me a story about a cat who learns to fly."
# the precisions the two forms must agree under: the f32 hint, and what the CPU picks by default
PRECISIONS = {"f32": dict(PRECISION_HINT), "default": {}}


def _form_steps(api, pipe):
    ffi, lib = api.ffi, api.lib
    one, main = ffi.new("size_t*"), ffi.new("size_t*")
    assert lib.ovgenai_c_bundled_llm_pipeline_get_form_steps(pipe, one, main) == 0, api.last_error()
    return one[0], main[0]


@pytest.fixture(scope="module", params=["on", "off"])
def counted_pipe(request, api, create_pipe, smol_dir):
    flag = "YES" if request.param == "on" else "NO"
    yield from owned_pipe(api, create_pipe, smol_dir, "ATTENTION_BACKEND", "PA", "OVGENAI_C_STATIC_DECODE", flag)


def test_one_token_steps_run_on_the_static_form_only_when_on(api, counted_pipe, request):
    on = request.node.callspec.params["counted_pipe"] == "on"
    before = _form_steps(api, counted_pipe)
    res = generate(api, counted_pipe, PROMPT, Config(api, max_new_tokens=20, ignore_eos=True))
    assert res.status == 0, api.last_error()
    one, main = (a - b for a, b in zip(_form_steps(api, counted_pipe), before))
    # the prompt is one inference on the main form, the 19 steps after the first token one token each
    assert (one, main) == ((19, 1) if on else (0, 20))
    # beam search steps several sequences: the main form, whatever the switch says
    before = _form_steps(api, counted_pipe)
    res = generate(api, counted_pipe, PROMPT, Config(api, max_new_tokens=8, num_beams=3, num_return_sequences=2))
    assert res.status == 0, api.last_error()
    one, main = (a - b for a, b in zip(_form_steps(api, counted_pipe), before))
    assert one == 0 and main >= 2


def test_default_is_on_for_a_small_model_on_cpu(api, create_pipe, smol_dir):
    gen = owned_pipe(api, create_pipe, smol_dir, "ATTENTION_BACKEND", "PA")
    pipe = next(gen)
    try:
        assert generate(api, pipe, PROMPT, Config(api, max_new_tokens=5, ignore_eos=True)).status == 0
        assert _form_steps(api, pipe) == (4, 1)  # SmolLM2-135M's weights file: 92 MB, under the 256 MiB line
    finally:
        next(gen, None)


def test_sdpa_engine_has_no_forms_to_count(api, create_pipe, tiny_dir):
    gen = owned_pipe(api, create_pipe, tiny_dir, "ATTENTION_BACKEND", "SDPA")
    pipe = next(gen)
    try:
        assert generate(api, pipe, PROMPT, Config(api, max_new_tokens=5)).status == 0
        assert _form_steps(api, pipe) == (0, 0)
    finally:
        next(gen, None)


@pytest.mark.parametrize("value", ["maybe", "", "yes please"])
def test_a_bad_value_fails_the_create_naming_the_property(api, create_pipe, tiny_dir, value):
    st, pipe = create_pipe(tiny_dir, "OVGENAI_C_STATIC_DECODE", value)
    assert st != 0 and pipe == api.ffi.NULL
    assert "OVGENAI_C_STATIC_DECODE must be YES or NO" in api.last_error()


def test_form_steps_refuses_null_arguments(api, counted_pipe):
    ffi, lib = api.ffi, api.lib
    out = ffi.new("size_t*")
    assert lib.ovgenai_c_bundled_llm_pipeline_get_form_steps(ffi.NULL, out, out) != 0
    assert "pipe" in api.last_error()
    assert lib.ovgenai_c_bundled_llm_pipeline_get_form_steps(counted_pipe, ffi.NULL, out) != 0
    assert "one_token_form" in api.last_error()


# ---------------------------------------------------------------- the same tokens with the form on and off

CONFIGS = {
    "greedy": dict(max_new_tokens=64),
    "sampling": dict(max_new_tokens=40, do_sample=True, temperature=0.8, top_k=40, top_p=0.9, rng_seed=7),
    "two_samples": dict(max_new_tokens=24, do_sample=True, num_return_sequences=2, rng_seed=3),
    "beams": dict(max_new_tokens=24, num_beams=4, num_return_sequences=2),
    "stop_string": dict(max_new_tokens=64, stop_strings={"."}, include_stop_str_in_output=True),
    "repetition_penalty": dict(max_new_tokens=48, repetition_penalty=1.3, no_repeat_ngram_size=3),
}


@pytest.fixture(scope="module", params=list(PRECISIONS))
def on_off(request, smol_dir):
    props = PRECISIONS[request.param]
    with ovgenai_c.LLMPipeline(smol_dir, "CPU", ATTENTION_BACKEND="PA", **props) as on, \
            ovgenai_c.LLMPipeline(smol_dir, "CPU", ATTENTION_BACKEND="PA", OVGENAI_C_STATIC_DECODE="NO",
                                  **props) as off:
        yield on, off


@pytest.mark.parametrize("name", list(CONFIGS))
def test_same_answers_with_the_form_on_and_off(on_off, name):
    on, off = on_off
    a = on.generate([PROMPT], **CONFIGS[name])
    b = off.generate([PROMPT], **CONFIGS[name])
    assert a.texts == b.texts and a.scores == b.scores
    assert a.texts[0]


def test_same_chat_turns_with_the_form_on_and_off(on_off):
    on, off = on_off
    turns = ["Hi! Name three colours.", "Which of them is the warmest?", "Write one sentence about it."]
    answers = []
    for pipe in on_off:
        pipe.start_chat()
        try:
            answers.append([str(pipe.generate(t, max_new_tokens=32)) for t in turns])
        finally:
            pipe.finish_chat()
    assert answers[0] == answers[1]


def test_same_answer_across_kv_cache_growth(tiny_dir):
    # the block pool starts at 16 blocks and grows (new tensors set on both forms' requests) past 512 tokens
    answers = []
    for flag in ("YES", "NO"):
        with ovgenai_c.LLMPipeline(tiny_dir, "CPU", ATTENTION_BACKEND="PA", OVGENAI_C_STATIC_DECODE=flag,
                                   **PRECISION_HINT) as pipe:
            res = pipe.generate(["Once upon a time"], max_new_tokens=700, ignore_eos=True)
            answers.append((res.texts, res.perf_metrics.get_num_generated_tokens()))
    assert answers[0] == answers[1] and answers[0][1] == 700


def test_prompt_lookup_same_answers_with_the_form_on_and_off(smol_dir):
    prompt = ("Rewrite this sentence with correct spelling: The quick brwon fox jumsp over the lazy dgo, and the "
              "quick brwon fox jumsp again.")
    answers = []
    for flag in ("YES", "NO"):
        with ovgenai_c.LLMPipeline(smol_dir, "CPU", prompt_lookup=True, OVGENAI_C_STATIC_DECODE=flag) as pipe:
            answers.append(str(pipe.generate(prompt, max_new_tokens=60, num_assistant_tokens=5,
                                             max_ngram_size=3)))
    assert answers[0] == answers[1] and answers[0]


def test_batching_lone_request_same_tokens_with_the_form_on_and_off(smol_dir):
    config = ovgenai_c.GenerationConfig(max_new_tokens=40, ignore_eos=True)
    tokens = []
    for flag in ("YES", "NO"):
        with ContinuousBatchingPipeline(smol_dir, None, "CPU", {"OVGENAI_C_STATIC_DECODE": flag}) as cb:
            tokens.append(cb.generate([PROMPT], [config])[0].tokens[0])
    assert tokens[0] == tokens[1] and len(tokens[0]) == 40


def test_environment_variable_sets_the_default_and_the_property_wins(api, create_pipe, tiny_dir, monkeypatch):
    monkeypatch.setenv("OVGENAI_C_STATIC_DECODE", "NO")
    for props, expected in (((), (0, 5)), (("OVGENAI_C_STATIC_DECODE", "YES"), (4, 1))):
        gen = owned_pipe(api, create_pipe, tiny_dir, "ATTENTION_BACKEND", "PA", *props)
        pipe = next(gen)
        try:
            assert generate(api, pipe, PROMPT, Config(api, max_new_tokens=5, ignore_eos=True)).status == 0
            assert _form_steps(api, pipe) == expected
        finally:
            next(gen, None)
    monkeypatch.setenv("OVGENAI_C_STATIC_DECODE", "sometimes")
    st, _ = create_pipe(tiny_dir, "ATTENTION_BACKEND", "PA")
    assert st != 0 and "the environment variable OVGENAI_C_STATIC_DECODE must be YES or NO" in api.last_error()
