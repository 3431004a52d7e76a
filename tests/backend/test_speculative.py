"""Speculative decoding with a draft model on the bundled backend (LLMPipeline(path, "CPU",
draft_model=draft_model(draft_path)), as openvino_genai's pybind API): token-exact with plain greedy decoding and with
openvino_genai's own speculative pipeline (the oracle), seeded sampling equal to plain sampling, stop rules and
streaming inside accepted runs of drafts, chat turns, and refusals by name.

The models are made here by scripts/make_tiny_gguf.py: a main model (F16) and drafts sharing its tokenizer — the
same random weights quantized to Q8_0 (a draft that is often right: several-token steps and rejections), other
random weights (always wrong) and the main model itself (always right). Both sides of every comparison run with
batch-invariant kernels (EXACT), as in test_prompt_lookup.py: under CPU's defaults a several-token verification
rounds differently from one-token steps, so an answer can part from plain decoding at a near-tie (GenAI's own
speculative pipeline does the same).
"""
from __future__ import annotations

import pathlib

import pytest

import ovgenai_c
from helpers import tiny_gguf_generator
from ovgenai_c import StreamingStatus, errors

pytest.importorskip("gguf", reason="the gguf package (fixture generator) not installed")
pytestmark = pytest.mark.engine_explicit  # speculative decoding always runs the PA engine (as GenAI's)

EXACT = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0", "KV_CACHE_PRECISION": "f32"}
PROMPTS = ["The quick brown fox", "Hello, world!", "What is 2+2? Answer briefly.", "Once upon a time there was"]
MAX_NEW = 40




@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{name: path}: the main model and its drafts."""
    gen = tiny_gguf_generator()
    d = tmp_path_factory.mktemp("speculative")
    paths = {name: d / name / f"{name}.gguf" for name in ("main", "q8", "other")}  # a folder each (IR goes beside)
    for path in paths.values():
        path.parent.mkdir()
    gen.make_gguf(paths["main"], arch="llama", weight_type="F16", seed=5)
    gen.make_gguf(paths["q8"], arch="llama", weight_type="Q8_0", embed_type="Q8_0", output_type="Q8_0", seed=5)
    gen.make_gguf(paths["other"], arch="llama", weight_type="F16", seed=9)
    return {k: str(v) for k, v in paths.items()}


@pytest.fixture(scope="module")
def plain(models):
    with ovgenai_c.LLMPipeline(models["main"], "CPU", ATTENTION_BACKEND="PA", **EXACT) as p:
        yield p


@pytest.fixture(scope="module")
def drafted(models):
    """{draft name: pipeline on the main model with that draft}."""
    pipes = {name: ovgenai_c.LLMPipeline(models["main"], "CPU",
                                         draft_model=ovgenai_c.draft_model(models[name], **EXACT), **EXACT)
             for name in ("q8", "other", "main")}
    yield pipes
    for p in pipes.values():
        p.close()


def _steps(res) -> list:
    return list(res.perf_metrics.raw_metrics.m_batch_sizes)


@pytest.mark.parametrize("fields", [dict(num_assistant_tokens=4), dict(num_assistant_tokens=1), {},
                                    dict(assistant_confidence_threshold=0.3)],
                         ids=["k4", "k1", "default", "confidence"])
def test_greedy_is_token_exact_with_plain_greedy(plain, drafted, fields):
    taken = {}
    for name, pipe in drafted.items():
        steps = []
        for prompt in PROMPTS:
            want = plain.generate(prompt, max_new_tokens=MAX_NEW)
            got = pipe.generate(prompt, max_new_tokens=MAX_NEW, **fields)
            assert str(got) == str(want), (name, prompt)
            assert got.perf_metrics.get_num_generated_tokens() == want.perf_metrics.get_num_generated_tokens()
            assert sum(_steps(got)) == got.perf_metrics.get_num_generated_tokens()  # TPOT counts tokens, not steps
            steps += _steps(got)[1:]  # (the first is the prompt's)
        taken[name] = steps
    k = fields.get("num_assistant_tokens", 5 if not fields else None)
    if k is not None:  # a step takes at most its drafts and the main model's own token
        assert max(max(s) for s in taken.values()) <= k + 1
        assert max(taken["main"]) == k + 1  # the model as its own draft: whole drafts accepted
    other = taken["other"]  # a draft that is nearly always wrong: steps take the main model's token only
    assert sum(s == 1 for s in other) >= 0.9 * len(other)
    if fields.get("num_assistant_tokens") != 1:
        assert any(s > 2 for s in taken["q8"]) and any(s == 1 for s in taken["q8"])  # accepted and rejected runs


def test_answers_equal_genai_speculative_pipeline(models):
    og = pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
    # GenAI's draft_model() reads an IR folder only: the draft as GenAI writes it from the GGUF, for both sides
    og.LLMPipeline(models["q8"], "CPU", enable_save_ov_model=True)
    draft_ir = str(pathlib.Path(models["q8"]).parent)
    oracle = og.LLMPipeline(models["main"], "CPU", draft_model=og.draft_model(draft_ir, "CPU", **EXACT), **EXACT)
    ours = ovgenai_c.LLMPipeline(models["main"], "CPU", draft_model=ovgenai_c.draft_model(draft_ir, **EXACT), **EXACT)
    for prompt in PROMPTS:
        for fields in (dict(num_assistant_tokens=3), dict(assistant_confidence_threshold=0.4)):
            want = oracle.generate([prompt], max_new_tokens=MAX_NEW, **fields)
            got = ours.generate([prompt], max_new_tokens=MAX_NEW, **fields)
            assert got.texts == list(want.texts), (prompt, fields)
            assert got.perf_metrics.get_num_generated_tokens() == want.perf_metrics.get_num_generated_tokens()
    ours.close()


def test_extended_perf_metrics_count_drafts_and_time_both_models(plain, drafted):
    from ovgenai_c.results import SDPerfMetrics, SDPerModelsPerfMetrics

    assert plain.generate(PROMPTS[0], max_new_tokens=8).extended_perf_metrics is None  # as GenAI's without a draft
    rates = {}
    for name, pipe in drafted.items():
        res = pipe.generate([PROMPTS[0]], max_new_tokens=MAX_NEW, num_assistant_tokens=4)
        ext, raw = res.extended_perf_metrics, res.perf_metrics.raw_metrics
        assert isinstance(ext, SDPerModelsPerfMetrics)
        # each verification step takes its accepted drafts and the main model's token (a step that reaches
        # max_new_tokens on an accepted draft: its drafts only)
        taken = raw.m_batch_sizes[1:]
        assert 0 < len(raw.draft_proposed_tokens) <= len(taken)
        for t, proposed, accepted in zip(taken, raw.draft_proposed_tokens, raw.draft_accepted_tokens):
            assert accepted <= proposed <= 4 and t in (accepted + 1, accepted)
        assert ext.get_num_draft_tokens() == sum(raw.draft_proposed_tokens)
        assert ext.get_num_accepted_tokens() + ext.get_num_rejected_tokens() == ext.get_num_draft_tokens()
        main = ext.main_model_metrics
        assert isinstance(main, SDPerfMetrics) and main.get_num_generated_tokens() == MAX_NEW
        assert main.get_ttft() == res.perf_metrics.get_ttft() and main.get_ttst().mean > 0
        draft = ext.draft_model_metrics
        assert draft.get_num_generated_tokens() == ext.get_num_draft_tokens()
        assert len(raw.draft_infer_durations) == len(raw.draft_fed_tokens) >= len(raw.draft_proposed_tokens)
        assert draft.get_inference_duration().mean == pytest.approx(sum(raw.draft_infer_durations) / 1000.0)
        assert draft.get_ttft().mean > 0 and draft.get_latency().mean > 0
        assert ext.get_num_draft_processed_tokens() == sum(raw.draft_fed_tokens) >= ext.get_num_draft_tokens()
        assert ext.get_draft_to_main_inference_duration_ratio() > 0
        rates[name] = ext.get_draft_acceptance_rate()
    assert rates["main"] == 1.0 and rates["other"] < 0.2 and 0.2 < rates["q8"] < 1.0


def test_seeded_sampling_gives_plain_samplings_tokens(plain, drafted):
    # one draw per generated token, as upstream's validation without draft probabilities: a seed gives the tokens
    # plain multinomial sampling gives (GenAI's own speculative sampling fails such calls here: "content_length")
    for seed in (1, 7, 42):
        sampling = dict(do_sample=True, top_k=20, temperature=0.9, rng_seed=seed, max_new_tokens=MAX_NEW)
        want = plain.generate(PROMPTS[0], **sampling)
        for pipe in drafted.values():
            assert str(pipe.generate(PROMPTS[0], num_assistant_tokens=4, **sampling)) == str(want)


def test_stop_rules_and_streaming_inside_accepted_drafts(plain, drafted):
    pipe = drafted["main"]  # whole drafts accepted: every rule below fires inside a several-token step
    full = str(plain.generate(PROMPTS[3], max_new_tokens=MAX_NEW))
    stop = full[len(full) // 2: len(full) // 2 + 3]
    for kw in (dict(max_new_tokens=7), dict(max_new_tokens=MAX_NEW, stop_strings={stop}),
               dict(max_new_tokens=MAX_NEW, stop_strings={stop}, include_stop_str_in_output=True),
               dict(max_new_tokens=MAX_NEW, repetition_penalty=1.3)):
        want = plain.generate(PROMPTS[3], **kw)
        chunks: list = []
        got = pipe.generate(PROMPTS[3], streamer=lambda t: chunks.append(t) or StreamingStatus.RUNNING,
                            num_assistant_tokens=5, **kw)
        assert str(got) == str(want), kw
        assert "".join(chunks) == str(got), kw

    # a streamer's STOP after the 3rd chunk: the answer ends there, as plain decoding's does
    def stop_after(n, seen):
        def streamer(text):
            seen.append(text)
            return StreamingStatus.STOP if len(seen) == n else StreamingStatus.RUNNING
        return streamer

    a, b = [], []
    want = plain.generate(PROMPTS[1], max_new_tokens=MAX_NEW, streamer=stop_after(3, a))
    got = pipe.generate(PROMPTS[1], max_new_tokens=MAX_NEW, streamer=stop_after(3, b), num_assistant_tokens=1)
    assert b[:3] == a[:3] and str(got).startswith("".join(b[:3]))
    assert len(str(got)) < len(str(plain.generate(PROMPTS[1], max_new_tokens=MAX_NEW)))


def test_chat_turns_equal_plain_chat(plain, drafted):
    turns = ["Hello!", "Tell me more.", "And then?"]
    want = []
    plain.start_chat()
    for t in turns:
        want.append(str(plain.generate(t, max_new_tokens=16)))
    plain.finish_chat()
    for pipe in drafted.values():
        pipe.start_chat()
        try:
            assert [str(pipe.generate(t, max_new_tokens=16, num_assistant_tokens=3)) for t in turns] == want
        finally:
            pipe.finish_chat()


def test_beam_search_and_several_sequences_are_refused(drafted, plain):
    pipe = drafted["q8"]
    for kw in (dict(num_beams=2, num_return_sequences=2), dict(do_sample=True, num_return_sequences=2)):
        with pytest.raises(errors.ConfigError, match="not compatible with assistant generation"):
            pipe.generate("Hi", max_new_tokens=4, **kw)
    assert str(pipe.generate("Hi", max_new_tokens=4)) == str(plain.generate("Hi", max_new_tokens=4))  # still usable


def test_bad_draft_models_are_refused_by_name(models, tmp_path, smol_dir):
    with pytest.raises(errors.ModelNotFoundError, match="does not exist"):
        ovgenai_c.draft_model(tmp_path / "missing")
    with pytest.raises(errors.DeviceError, match="device"):
        ovgenai_c.draft_model(models["q8"], 3)
    with pytest.raises(errors.InvalidParameterError, match="draft_model"):
        ovgenai_c.LLMPipeline(models["main"], "CPU", draft_model=models["q8"])  # a path, not a draft_model()
    with pytest.raises(errors.NotSupportedError, match="draft_model and prompt_lookup"):
        ovgenai_c.LLMPipeline(models["main"], "CPU", draft_model=ovgenai_c.draft_model(models["q8"]),
                              prompt_lookup=True)
    with pytest.raises(errors.GenAIError, match="vocabulary .*49152.*1024.*same tokenizer"):
        ovgenai_c.LLMPipeline(models["main"], "CPU", draft_model=ovgenai_c.draft_model(str(smol_dir)))
    # ... and the pipeline that follows works
    with ovgenai_c.LLMPipeline(models["main"], "CPU", draft_model=ovgenai_c.draft_model(models["q8"])) as pipe:
        assert pipe.generate("Hi", max_new_tokens=3)


def test_the_batching_pipeline_refuses_a_draft_by_name(models):
    from ovgenai_c.batching import ContinuousBatchingPipeline

    with pytest.raises(errors.NotSupportedError, match="draft_model: speculative decoding runs on LLMPipeline"):
        ContinuousBatchingPipeline(models["main"], ovgenai_c.SchedulerConfig(), "CPU",
                                   draft_model=ovgenai_c.draft_model(models["q8"]))


def test_a_draft_that_fails_to_load_names_itself_and_leaves_nothing_behind(models, tmp_path):
    broken = tiny_gguf_generator().garbage_gguf(tmp_path / "broken.gguf")
    for _ in range(2):  # (a leak or a half-made pipeline would show on the second round)
        with pytest.raises(errors.GenAIError, match=r"loading the draft model '.*broken\.gguf' failed"):
            ovgenai_c.LLMPipeline(models["main"], "CPU", draft_model=ovgenai_c.draft_model(broken))
    with pytest.raises(errors.GenAIError, match="loading the draft model .* failed: compiling the model for device"):
        ovgenai_c.LLMPipeline(models["main"], "CPU", draft_model=ovgenai_c.draft_model(models["q8"], "NPU.7"))


def test_cancel_and_timeout_mid_draft_keep_the_pipeline_usable(plain, drafted):
    pipe = drafted["main"]
    want = str(plain.generate(PROMPTS[2], max_new_tokens=MAX_NEW))
    with pipe.stream(PROMPTS[2], max_new_tokens=MAX_NEW, num_assistant_tokens=4) as stream:
        first = next(iter(stream))  # then the stream is closed: the call is cancelled between steps
    assert want.startswith(first)
    with pytest.raises(errors.GenerationTimeoutError):
        pipe.generate(PROMPTS[2], max_new_tokens=1500, ignore_eos=True, num_assistant_tokens=4, timeout=0.05)
    assert str(pipe.generate(PROMPTS[2], max_new_tokens=MAX_NEW, num_assistant_tokens=4)) == want


def test_the_c_abi_takes_the_draft_as_a_json_property_and_checks_it(api, create_pipe, models):
    # what another language's binding sends: OVGENAI_C_DRAFT_MODEL as a string property of the variadic create
    import json

    from helpers import Config, generate

    spec = json.dumps({"path": models["q8"], "properties": EXACT})
    st, pipe = create_pipe(models["main"], "OVGENAI_C_DRAFT_MODEL", spec, *[x for kv in EXACT.items() for x in kv])
    assert st == 0, api.last_error()
    try:
        ok = generate(api, pipe, "Hello", Config(api, max_new_tokens=8, num_assistant_tokens=3))
        assert ok.status == 0 and ok.text
        for fields in (dict(num_beams=2, num_return_sequences=2), dict(do_sample=True, num_return_sequences=2)):
            bad = generate(api, pipe, "Hello", Config(api, max_new_tokens=4, **fields))
            assert bad.status != 0 and "not compatible with assistant generation" in api.last_error()
    finally:
        api.lib.ov_genai_llm_pipeline_free(pipe)
    for value, says in (("{", "must be a JSON object"), ("{}", 'needs "path"'),
                        (json.dumps({"path": models["q8"], "device": 3}), '"device" must be a string'),
                        (json.dumps({"path": models["q8"], "properties": {"X": 1}}), "property 'X' must be a string"),
                        (json.dumps({"path": models["q8"], "properties": {"prompt_lookup": "YES"}}),
                         "cannot have 'prompt_lookup' of its own")):
        st, pipe = create_pipe(models["main"], "OVGENAI_C_DRAFT_MODEL", value)
        assert st != 0 and pipe == api.ffi.NULL and says in api.last_error(), (value, api.last_error())
