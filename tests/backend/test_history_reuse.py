"""generate(ChatHistory) call after call, as the 2026.4 chat API is used: each call passes the whole history
(the model's previous answer appended as an assistant message, then a new user message). GenAI reuses the KV
cache of the previous call (stateful: the common token prefix when the history continues the previous one;
PagedAttention: its prefix cache), so which tokens are recomputed decides near-ties. The bundled backend must
be token-exact with the oracle (openvino_genai.LLMPipeline on the same IR and ATTENTION_BACKEND) over many
turns, greedy and seeded sampling, on both engines, and must count the same input tokens."""
from __future__ import annotations

import json

import pytest

from helpers import Config, chat_history, generate_with_history, oracle_pair

og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
pytestmark = pytest.mark.engine_explicit  # runs its engines itself: once per test command

ENGINES = ("SDPA", "PA")
QUESTIONS = [
    "Hi, I am Ann and I live by the sea.",
    "Tell me three facts about whales.",
    "Which of them is the most surprising?",
    "Write a haiku about it.",
    "Now make it rhyme.",
    "What is my name and where do I live?",
    "Summarise our conversation in one sentence.",
]
SAMPLING = dict(do_sample=True, temperature=0.9, top_p=0.95, top_k=40, rng_seed=7)


@pytest.fixture(scope="module", params=ENGINES)
def engine(request):
    return request.param


@pytest.fixture(scope="module")
def smol_pair(api, create_pipe, smol_dir, engine):
    yield from oracle_pair(api, create_pipe, smol_dir, engine)


@pytest.fixture(scope="module")
def tiny_pair(api, create_pipe, tiny_dir, engine):
    yield from oracle_pair(api, create_pipe, tiny_dir, engine)


def _run_turns(api, pipe, oracle, questions, max_new, sampling, system=None):
    """Both libraries through the same conversation; the assistant message of each turn is the oracle's answer
    (so one divergence does not hide the later turns). Returns [(ours, theirs, our_inputs, their_inputs)]."""
    lib = api.lib
    msgs = [{"role": "system", "content": system}] if system else []
    out = []
    okw = dict(max_new_tokens=max_new, **(sampling or {}))
    try:
        for q in questions:
            msgs.append({"role": "user", "content": q})
            hist = chat_history(api, json.dumps(msgs))
            try:
                r = generate_with_history(api, pipe, hist, Config(api, **okw), want_perf=True)
            finally:
                lib.ov_genai_chat_history_free(hist)
            assert r.status == 0, api.last_error()
            o = oracle.generate(og.ChatHistory(msgs), og.GenerationConfig(**okw))
            out.append((r.text, o.texts[0], r.perf["num_input"], o.perf_metrics.get_num_input_tokens()))
            msgs.append({"role": "assistant", "content": o.texts[0]})
    finally:
        assert lib.ov_genai_llm_pipeline_finish_chat(pipe) == 0
        oracle.finish_chat()
    return out


def _assert_same(turns):
    for i, (ours, theirs, n_ours, n_theirs) in enumerate(turns):
        assert ours == theirs, f"turn {i + 1}"
        assert n_ours == n_theirs, f"turn {i + 1}: input tokens"


@pytest.mark.parametrize("sampling", [None, SAMPLING], ids=["greedy", "seeded"])
def test_smol_history_turns_match_genai(api, smol_pair, sampling):
    pipe, oracle = smol_pair
    _assert_same(_run_turns(api, pipe, oracle, QUESTIONS, 40, sampling, system="You are a helpful assistant."))


@pytest.mark.parametrize("sampling", [None, SAMPLING], ids=["greedy", "seeded"])
def test_tiny_history_turns_match_genai(api, tiny_pair, sampling):
    pipe, oracle = tiny_pair
    _assert_same(_run_turns(api, pipe, oracle, [f"Q{i} abc" for i in range(8)], 12, sampling))


def test_history_that_does_not_continue_matches_genai(api, smol_pair):
    """A history that is not the previous one plus new messages (an edited earlier message, the same history
    again, a shorter one): GenAI's stateful pipeline starts over, its PA pipeline reuses what its prefix cache
    holds; the answers still equal GenAI's."""
    pipe, oracle = smol_pair
    lib = api.lib
    okw = dict(max_new_tokens=24)
    conversations = [
        [{"role": "user", "content": "Tell me a fact about the moon."}],
        [{"role": "user", "content": "Tell me a fact about the moon."}],  # the same again
        [{"role": "user", "content": "Tell me a fact about the sun."}],  # edited
        [{"role": "user", "content": "Tell me a fact about the sun."},
         {"role": "assistant", "content": "The sun is a star."},
         {"role": "user", "content": "And one about Mars?"}],
        [{"role": "user", "content": "Tell me a fact about the sun."}],  # shorter
    ]
    try:
        for msgs in conversations:
            hist = chat_history(api, json.dumps(msgs))
            try:
                r = generate_with_history(api, pipe, hist, Config(api, **okw), want_perf=True)
            finally:
                lib.ov_genai_chat_history_free(hist)
            o = oracle.generate(og.ChatHistory(msgs), og.GenerationConfig(**okw))
            assert r.text == o.texts[0]
            assert r.perf["num_input"] == o.perf_metrics.get_num_input_tokens()
    finally:
        assert lib.ov_genai_llm_pipeline_finish_chat(pipe) == 0
        oracle.finish_chat()
