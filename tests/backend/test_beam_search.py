"""Beam search in the bundled backend, compared with real OpenVINO GenAI (pybind) on the same attention backend
(the suite runs once per engine): texts, scores, ranking and token counts, with diverse groups, length penalty,
every stop criterion and no-repeat n-grams; plus what GenAI refuses (streaming) and the pipeline after it."""
from __future__ import annotations

import pytest

from helpers import Config, chat_with_oracle, default_backend, generate, make_streamer
from testsupport import PRECISION_HINT

og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")

CONFIGS = {
    "beams4-return4": dict(num_beams=4, num_return_sequences=4),
    "beams2": dict(num_beams=2),
    "diverse-groups": dict(num_beams=6, num_beam_groups=3, diversity_penalty=1.0, num_return_sequences=3),
    "length-penalty": dict(num_beams=4, num_return_sequences=2, length_penalty=0.5),
    "early": dict(num_beams=4, stop_criteria=0),
    "never": dict(num_beams=4, stop_criteria=2, num_return_sequences=2),
    "no-repeat-2": dict(num_beams=4, no_repeat_ngram_size=2, num_return_sequences=2),
    "ignore-eos": dict(num_beams=3, num_return_sequences=3, ignore_eos=True),
}
PROMPTS = ["What is the capital of France?", "Tell me something", "Write a haiku about the sea."]


def _oracle_generate(oracle, prompt, fields):
    gc = og.GenerationConfig()
    for k, v in fields.items():
        if k == "stop_criteria":
            v = [og.StopCriteria.EARLY, og.StopCriteria.HEURISTIC, og.StopCriteria.NEVER][v]
        setattr(gc, k, v)
    return oracle.generate([prompt], gc)


def _string_form(res):
    """ov_genai_decoded_results_get_string's form: the text alone, or "score: text" lines."""
    if len(res.texts) == 1:
        return res.texts[0]
    return "\n".join(f"{s:f}: {t}" for s, t in zip(res.scores, res.texts))


@pytest.fixture(scope="module")
def oracle_tiny(tiny_dir):
    props = {} if default_backend() == "PA" else {"ATTENTION_BACKEND": "SDPA"}
    return og.LLMPipeline(str(tiny_dir), "CPU", **props, **PRECISION_HINT)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_beam_search_matches_genai_tiny(api, tiny_pipe, oracle_tiny, name):
    for prompt in ("Hi", "Tell me something"):
        fields = dict(max_new_tokens=16, **CONFIGS[name])
        r = generate(api, tiny_pipe, prompt, Config(api, **fields), want_perf=True)
        assert r.status == 0, api.last_error()
        o = _oracle_generate(oracle_tiny, prompt, fields)
        assert r.text == _string_form(o)
        assert r.perf["num_generated"] == o.perf_metrics.get_num_generated_tokens()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_beam_search_matches_genai_smol(api, smol_pipe, oracle_smol, name):
    """Token-exact and score-exact with GenAI on the real model: equal log-probabilities (common with quantised
    weights) rank as upstream ranks them, and each beam keeps upstream's row in the batch."""
    for prompt in PROMPTS:
        fields = dict(max_new_tokens=24, **CONFIGS[name])
        r = generate(api, smol_pipe, prompt, Config(api, **fields), want_perf=True)
        assert r.status == 0, api.last_error()
        o = _oracle_generate(oracle_smol, prompt, fields)
        assert r.text == _string_form(o), (prompt, name)
        assert r.perf["num_generated"] == o.perf_metrics.get_num_generated_tokens()


def test_beam_results_are_ranked_and_distinct(api, smol_pipe):
    r = generate(api, smol_pipe, PROMPTS[0], Config(api, max_new_tokens=12, num_beams=5, num_return_sequences=5))
    assert r.status == 0, api.last_error()
    lines = r.text.split("\n")
    scores = [float(line.split(": ", 1)[0]) for line in lines]
    assert len(scores) == 5 and scores == sorted(scores, reverse=True)
    assert len(set(lines)) == 5


def test_beam_search_refuses_a_streamer_like_genai(api, tiny_pipe):
    sc, keep = make_streamer(api, lambda s: 0)
    r = generate(api, tiny_pipe, "Hi", Config(api, max_new_tokens=4, num_beams=2), streamer=sc)
    assert r.status == -17 and "streaming" in api.last_error()
    assert generate(api, tiny_pipe, "Hi", Config(api, max_new_tokens=4, num_beams=2)).status == 0


def test_greedy_after_beam_search_is_unchanged(api, smol_pipe, oracle_smol):
    """The beams' cache is dropped down to the prompt: a greedy call afterwards is the oracle's."""
    p = PROMPTS[1]
    assert generate(api, smol_pipe, p, Config(api, max_new_tokens=10, num_beams=3)).status == 0
    _oracle_generate(oracle_smol, p, dict(max_new_tokens=10, num_beams=3))
    r = generate(api, smol_pipe, p, Config(api, max_new_tokens=20))
    assert r.text == oracle_smol.generate([p], max_new_tokens=20).texts[0]


def test_beam_turns_in_a_chat(api, smol_pipe, oracle_smol):
    """Chat turns with beams: the best beam joins the history. On the stateful engine every turn equals GenAI's
    (it keeps the history's cache, drops the turn's beams, reads row 0 next). GenAI's PagedAttention pipeline
    also restores the best beam's own blocks from its prefix cache, which the bundled PA engine does not keep,
    so there only the first turn is compared; later turns are recomputed and may differ in the last digits."""
    turns = [("Hi, who are you?", dict(num_beams=3)), ("Tell me more.", dict(num_beams=3, num_return_sequences=2)),
             ("And then?", {})]
    with chat_with_oracle(api, smol_pipe, oracle_smol):
        for i, (q, kw) in enumerate(turns):
            fields = dict(max_new_tokens=16, **kw)
            r = generate(api, smol_pipe, q, Config(api, **fields))
            assert r.status == 0, api.last_error()
            o = _oracle_generate(oracle_smol, q, fields)
            if default_backend() == "SDPA" or i == 0:
                assert r.text == _string_form(o), (i, q)
            else:
                assert r.text
