"""Prompt-lookup decoding on the bundled backend (LLMPipeline(path, "CPU", prompt_lookup=True) with
num_assistant_tokens / max_ngram_size, as openvino_genai's pybind API): token-exact with plain greedy decoding and
with openvino_genai's own prompt-lookup pipeline (the oracle), stop rules inside an accepted run of drafts,
streaming, cancellation and perf metrics.

Both sides of every comparison run with batch-invariant kernels (EXACT below): f32 inference, no dynamic int8
quantization of the activations and an f32 KV cache. Under OpenVINO CPU's defaults those two quantize a token's
activations / keys differently when several tokens go through one inference, so a greedy answer can part from
plain decoding at a near-tie; GenAI's prompt-lookup pipeline does the same (see the README's Performance section).
"""
from __future__ import annotations

import pytest

import ovgenai_c
from ovgenai_c import StreamingStatus, errors

pytestmark = pytest.mark.engine_explicit  # prompt lookup always runs the PA engine (as GenAI's)

EXACT = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0", "KV_CACHE_PRECISION": "f32"}
LOOKUP = dict(num_assistant_tokens=5, max_ngram_size=3)

PARAGRAPH = ("The old lighthouse stood at the edge of the cliff for more than a hundred years. Every night its keeper "
             "climbed the narrow stairs, lit the lamp and watched the ships pass safely through the dark water.")
PROMPTS = [
    f"Repeat the following text exactly:\n\n{PARAGRAPH}",
    f"Fix the spelling in this text and change nothing else:\n\n{PARAGRAPH.replace('hundred', 'hundrd')}",
    'Extract the value of "city" from this JSON: {"name": "Alice", "age": 30, "city": "Paris", "job": "pilot"}',
    "Rename the function add to sum in this code:\n\ndef add(a, b):\n    return a + b\n\nprint(add(1, 2))\n",
    "What is the capital of France?",
    "Tell me a story about a dragon.",
    "Write a haiku about autumn.",
    "List three uses of copper.",
]


@pytest.fixture(scope="module", params=["tiny", "smol"])
def pair(request):
    """(plain pipeline, prompt-lookup pipeline) on one model, both on the PA engine."""
    name = request.param
    path = str(request.getfixturevalue("tiny_dir" if name == "tiny" else "smol_dir"))
    with ovgenai_c.LLMPipeline(path, "CPU", ATTENTION_BACKEND="PA", **EXACT) as plain, \
            ovgenai_c.LLMPipeline(path, "CPU", prompt_lookup=True, **EXACT) as lookup:
        yield plain, lookup


@pytest.fixture(scope="module")
def smol_pair(smol_dir):
    with ovgenai_c.LLMPipeline(str(smol_dir), "CPU", ATTENTION_BACKEND="PA", **EXACT) as plain, \
            ovgenai_c.LLMPipeline(str(smol_dir), "CPU", prompt_lookup=True, **EXACT) as lookup:
        yield plain, lookup


def _steps(res) -> list:
    return list(res.perf_metrics.raw_metrics.m_batch_sizes)


@pytest.mark.parametrize("lookup_cfg", [LOOKUP, dict(num_assistant_tokens=1, max_ngram_size=1),
                                        dict(num_assistant_tokens=3, max_ngram_size=2),
                                        dict(num_assistant_tokens=10, max_ngram_size=5)],
                         ids=["k5n3", "k1n1", "k3n2", "k10n5"])
def test_greedy_is_token_exact_with_plain_greedy(pair, lookup_cfg):
    plain, lookup = pair
    multi_token_steps = 0
    for prompt in PROMPTS:
        want = plain.generate(prompt, max_new_tokens=48)
        got = lookup.generate(prompt, max_new_tokens=48, **lookup_cfg)
        assert str(got) == str(want), prompt
        assert got.perf_metrics.get_num_generated_tokens() == want.perf_metrics.get_num_generated_tokens()
        assert sum(_steps(got)) == got.perf_metrics.get_num_generated_tokens()  # TPOT counts tokens, not steps
        multi_token_steps += sum(1 for b in _steps(got) if b > 1)
    if "tiny" not in plain.models_path:  # the tiny model's random weights reject every draft (a check of its own)
        assert multi_token_steps > 0  # drafts were accepted: the comparison exercised the whole verification path


def test_bench_prompts_and_long_drafts_are_token_exact(smol_pair):
    # the benchmark's prompts (its lookup section) under several draft settings, including long drafts and the
    # unigram fallback: every answer is plain greedy's; the draft length grows past num_assistant_tokens while
    # whole drafts are accepted (a step takes more than num_assistant_tokens + 1 tokens)
    from ovgenai_c_tools.bench.prompts import LOOKUP_GROUNDED, LOOKUP_OPEN

    plain, lookup = smol_pair
    grew = False
    for prompt in [*LOOKUP_GROUNDED.values(), *LOOKUP_OPEN.values(), PROMPTS[0]]:
        want = plain.generate(prompt, max_new_tokens=64)
        for cfg in (dict(num_assistant_tokens=2, max_ngram_size=3), dict(num_assistant_tokens=16, max_ngram_size=1)):
            got = lookup.generate(prompt, max_new_tokens=64, **cfg)
            assert str(got) == str(want), (prompt[:40], cfg)
            assert sum(_steps(got)) == got.perf_metrics.get_num_generated_tokens()
            grew = grew or max(_steps(got)) > cfg["num_assistant_tokens"] + 1
    assert grew


def test_input_grounded_prompts_take_fewer_steps_than_tokens(smol_pair):
    plain, lookup = smol_pair
    res = lookup.generate(PROMPTS[0], max_new_tokens=64, **LOOKUP)
    assert str(res) == str(plain.generate(PROMPTS[0], max_new_tokens=64))
    steps = _steps(res)
    assert len(steps) * 2 < res.perf_metrics.get_num_generated_tokens()  # a copied paragraph: most drafts accepted
    assert res.perf_metrics.get_tpot().mean > 0 and res.perf_metrics.get_ttft().mean > 0


def _period(ids: list) -> int:
    """The shortest period the last tokens repeat with (three times over), 0 if none."""
    for p in range(1, len(ids) // 3 + 1):
        tail = ids[-3 * p:]
        if all(tail[i] == tail[i + p] for i in range(2 * p)):
            return p
    return 0


def test_a_looping_answer_is_drafted_past_its_period(smol_pair):
    # SmolLM2 answers this by repeating one line: the drafts continue the loop past the end of the text, so a step
    # takes more tokens than one period (a copy of the earlier occurrence alone ends where the text ends)
    plain, lookup = smol_pair
    prompt = "Write the word cat 50 times, separated by spaces."
    want = plain.generate(prompt, max_new_tokens=96)
    got = lookup.generate(prompt, max_new_tokens=96, **LOOKUP)
    assert str(got) == str(want)
    ids = [int(t) for t in lookup.get_tokenizer().encode(str(got), add_special_tokens=False).input_ids.data[0]]
    period = _period(ids)
    assert 0 < period < 24, "the answer no longer loops: pick another prompt"
    assert max(_steps(got)) > period + 1


@pytest.mark.parametrize("max_new", [1, 2, 3, 5, 6, 7, 11])
def test_max_new_tokens_edges(smol_pair, max_new):
    plain, lookup = smol_pair
    want = plain.generate(PROMPTS[0], max_new_tokens=max_new)
    got = lookup.generate(PROMPTS[0], max_new_tokens=max_new, **LOOKUP)
    assert str(got) == str(want)
    assert got.perf_metrics.get_num_generated_tokens() == max_new == sum(_steps(got))


@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("stop", ["narrow", "lamp and", "ships pass safely", "cliff"])
def test_stop_strings_inside_an_accepted_run(smol_pair, stop, include):
    plain, lookup = smol_pair
    kw = dict(max_new_tokens=64, stop_strings={stop}, include_stop_str_in_output=include)
    want = plain.generate(PROMPTS[0], **kw)
    got = lookup.generate(PROMPTS[0], **kw, **LOOKUP)
    assert str(got) == str(want)
    assert [r.name for r in got.finish_reasons] == [r.name for r in want.finish_reasons] == ["STOP"]
    assert got.perf_metrics.get_num_generated_tokens() == want.perf_metrics.get_num_generated_tokens()


def test_eos_inside_an_accepted_run_ends_the_answer(smol_pair):
    # the prompt's chat template puts <|im_end|> (SmolLM2's eos) right after the text to repeat: once the answer
    # has copied the text, the drafts continue with that eos; where the run of drafts starts depends on the draft
    # count, so over a few counts the eos comes inside a step of several tokens
    plain, lookup = smol_pair
    prompt = "Repeat exactly, nothing else: the cat sat on the mat and looked at the dog by the door."
    want = plain.generate(prompt, max_new_tokens=60)
    assert [r.name for r in want.finish_reasons] == ["STOP"]
    last_steps = []
    for k in range(2, 8):
        got = lookup.generate(prompt, max_new_tokens=60, num_assistant_tokens=k, max_ngram_size=3)
        assert str(got) == str(want), k
        assert [r.name for r in got.finish_reasons] == ["STOP"]
        assert got.perf_metrics.get_num_generated_tokens() == want.perf_metrics.get_num_generated_tokens()
        last_steps.append(_steps(got)[-1])
    assert max(last_steps) > 1, last_steps  # the eos was accepted after other drafts of its step


def _templated_ids(pipe, prompt):
    tok = pipe.get_tokenizer()
    text = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True)
    return tok.encode(text, add_special_tokens=False)


class _Collect(ovgenai_c.StreamerBase):
    def __init__(self, stop_after=None, status=StreamingStatus.RUNNING):
        self.ids, self.ended, self.stop_after, self.status = [], 0, stop_after, status

    def write(self, token):
        self.ids.extend(token if isinstance(token, list) else [token])
        if self.stop_after is not None and len(self.ids) >= self.stop_after:
            return self.status
        return StreamingStatus.RUNNING

    def end(self):
        self.ended += 1


def test_token_streamer_sees_each_token_once_and_in_order(smol_pair):
    plain, lookup = smol_pair
    ids = _templated_ids(lookup, PROMPTS[1])
    s = _Collect()
    got = lookup.generate(ids, max_new_tokens=48, streamer=s, **LOOKUP)
    want = plain.generate(ids, max_new_tokens=48)
    assert s.ids == list(got.tokens[0]) == list(want.tokens[0])
    assert s.ended == 1
    assert any(b > 1 for b in _steps(got))


def test_text_streamer_chunks_add_up_to_the_answer(smol_pair):
    plain, lookup = smol_pair
    chunks, want_chunks = [], []
    got = lookup.generate(PROMPTS[3], max_new_tokens=48, streamer=chunks.append, **LOOKUP)
    want = plain.generate(PROMPTS[3], max_new_tokens=48, streamer=want_chunks.append)
    assert "".join(chunks) == str(got) == str(want)
    assert chunks == want_chunks


@pytest.mark.parametrize("status", [StreamingStatus.STOP, StreamingStatus.CANCEL])
@pytest.mark.parametrize("after", [1, 4, 9])
def test_stop_and_cancel_mid_run_end_as_plain_decoding(smol_pair, status, after):
    # the streamer stops in the middle of a run of accepted drafts: the tokens after it are not streamed and the
    # call ends exactly as plain decoding's (same tokens returned, same finish reason)
    plain, lookup = smol_pair
    ids = _templated_ids(lookup, PROMPTS[0])
    a, b = _Collect(after, status), _Collect(after, status)
    got = lookup.generate(ids, max_new_tokens=48, streamer=a, **LOOKUP)
    want = plain.generate(ids, max_new_tokens=48, streamer=b)
    assert a.ids == b.ids and len(a.ids) == after
    assert list(got.tokens[0]) == list(want.tokens[0])
    assert [r.name for r in got.finish_reasons] == [r.name for r in want.finish_reasons]
    # the pipeline goes on working, from its prefix cache too
    assert str(lookup.generate(PROMPTS[0], max_new_tokens=16, **LOOKUP)) == str(plain.generate(PROMPTS[0], max_new_tokens=16))


def test_stream_iterator_close_cancels_mid_run(smol_pair):
    plain, lookup = smol_pair
    it = lookup.stream(PROMPTS[0], max_new_tokens=64, **LOOKUP)
    first = next(iter(it))
    it.close()
    assert first
    assert str(lookup.generate(PROMPTS[2], max_new_tokens=24, **LOOKUP)) == str(plain.generate(PROMPTS[2], max_new_tokens=24))


def test_seeded_sampling_is_plain_sampling(smol_pair):
    # one draw per generated token, in order (upstream's validation without draft probabilities): the same seed
    # gives plain multinomial decoding's tokens
    plain, lookup = smol_pair
    for seed in (1, 7, 42):
        kw = dict(max_new_tokens=40, do_sample=True, temperature=0.7, top_k=20, rng_seed=seed)
        assert str(lookup.generate(PROMPTS[0], **kw, **LOOKUP)) == str(plain.generate(PROMPTS[0], **kw))


def test_penalties_are_applied_token_by_token(smol_pair):
    plain, lookup = smol_pair
    kw = dict(max_new_tokens=40, repetition_penalty=1.3, presence_penalty=0.2, frequency_penalty=0.1)
    assert str(lookup.generate(PROMPTS[0], **kw, **LOOKUP)) == str(plain.generate(PROMPTS[0], **kw))


def test_chat_turns_are_plain_chat_turns(smol_pair):
    plain, lookup = smol_pair
    answers = []
    for pipe, kw in ((plain, {}), (lookup, LOOKUP)):
        pipe.start_chat()
        try:
            answers.append([str(pipe.generate(p, max_new_tokens=32, **kw)) for p in (PROMPTS[0], "Now repeat it again.")])
        finally:
            pipe.finish_chat()
    assert answers[0] == answers[1]


# openvino_genai's own prompt-lookup pipeline (2026.4.1) fails some calls with stop strings: its sampler's
# stop-string match over a step of several tokens removes more tokens than the sequence has ("Cannot remove more
# tokens than has been generated", sequence_group.hpp). Whether a call fails changes from one call to the next (the
# same call failed, then answered): CI failed on it once, with a prompt and stop string that answered in three runs
# before and after on the same machine.
_UPSTREAM_STOP_STRING_BUG = "Cannot remove more tokens than has been generated"


@pytest.fixture(scope="module")
def genai_plain(smol_dir):
    """openvino_genai's plain greedy pipeline under the exact settings (the fallback oracle)."""
    og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
    return og.LLMPipeline(str(smol_dir), "CPU", **EXACT)


def _oracle_answer(lookup_oracle, plain_oracle, prompt, kw) -> str:
    """GenAI's prompt-lookup answer; GenAI's plain greedy answer where its lookup pipeline trips over its own bug."""
    try:
        return lookup_oracle.generate(prompt, **kw, **LOOKUP)
    except RuntimeError as exc:
        if "stop_strings" not in kw or _UPSTREAM_STOP_STRING_BUG not in str(exc):
            raise
        return plain_oracle.generate(prompt, **kw)


def test_genai_prompt_lookup_pipeline_is_the_oracle(smol_dir, genai_plain):
    og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
    oracle = og.LLMPipeline(str(smol_dir), "CPU", prompt_lookup=True, **EXACT)
    with ovgenai_c.LLMPipeline(str(smol_dir), "CPU", prompt_lookup=True, **EXACT) as ours:
        for prompt in PROMPTS:
            for kw in (dict(max_new_tokens=48), dict(max_new_tokens=48, stop_strings={"the"})):
                want = _oracle_answer(oracle, genai_plain, prompt, kw)
                assert str(ours.generate(prompt, **kw, **LOOKUP)) == want, prompt


@pytest.mark.parametrize("stop", ["a", " "])
def test_stop_strings_where_genai_prompt_lookup_fails(genai_plain, smol_pair, stop):
    # short stop strings that end the answer inside a step of several tokens: GenAI's prompt-lookup pipeline fails
    # most of these calls on its own bug (above); ours answers as plain greedy does, in GenAI's plain pipeline too
    _, lookup = smol_pair
    for prompt in PROMPTS[4:]:
        kw = dict(max_new_tokens=48, stop_strings={stop})
        got = lookup.generate(prompt, **kw, **LOOKUP)
        assert str(got) == genai_plain.generate(prompt, **kw), prompt
        assert [r.name for r in got.finish_reasons] == ["STOP"]


def test_a_prompt_lookup_pipeline_needs_the_lookup_fields(smol_pair):
    _, lookup = smol_pair
    with pytest.raises(errors.ConfigError, match="max_ngram_size.*num_assistant_tokens"):
        lookup.generate("Hi", max_new_tokens=4)
    with pytest.raises(errors.ConfigError, match="max_ngram_size.*num_assistant_tokens"):
        lookup.generate("Hi", max_new_tokens=4, num_assistant_tokens=3)
    with pytest.raises(RuntimeError, match="one sequence"):
        lookup.generate("Hi", max_new_tokens=4, num_beams=2, **LOOKUP)
    # set as the pipeline's config, the fields apply to every call
    cfg = lookup.get_generation_config()
    cfg.num_assistant_tokens, cfg.max_ngram_size, cfg.max_new_tokens = 4, 2, 8
    lookup.set_generation_config(cfg)
    assert str(lookup.generate(PROMPTS[0])) == str(smol_pair[0].generate(PROMPTS[0], max_new_tokens=8))


def test_c_abi_create_takes_the_property_as_a_string(api, smol_dir):
    # what the binding sends: prompt_lookup=YES; any other value than YES/NO/true/false is an error naming it
    ffi, lib = api.ffi, api.lib
    out = ffi.new("ov_genai_llm_pipeline**")
    args = [ffi.new("char[]", b"prompt_lookup"), ffi.new("char[]", b"maybe")]
    rc = lib.ov_genai_llm_pipeline_create(str(smol_dir).encode(), b"CPU", 2, out, *args)
    assert rc != 0 and "prompt_lookup" in api.last_error()
