"""Drop-in behaviour against openvino_genai (the pybind oracle) on the same model folder: errors as RuntimeError,
GenerationConfig semantics, the pipeline's model defaults, result types, ChatHistory, streamers, property values
and clear refusals of what the C ABI cannot carry."""
from __future__ import annotations

import math

import pytest

import ovgenai_c
from ovgenai_c import errors

og = pytest.importorskip("openvino_genai")

from pathlib import Path  # noqa: E402

TINY_IR = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "ir"

F32 = {"INFERENCE_PRECISION_HINT": "f32"}  # tokens compared across engines: one precision on both sides

# upstream's own invalid configurations (tests/python_tests/test_generation_config.py lists the same rules)
INVALID = [
    dict(num_return_sequences=0), dict(num_return_sequences=2), dict(), dict(ignore_eos=True),
    dict(stop_token_ids={-1}), dict(max_new_tokens=0), dict(max_new_tokens=10, min_new_tokens=20),
    dict(max_new_tokens=1, repetition_penalty=-1.0), dict(max_new_tokens=1, presence_penalty=-3.0),
    dict(max_new_tokens=1, frequency_penalty=3.0), dict(max_new_tokens=1, do_sample=True, top_p=1.1),
    dict(max_new_tokens=1, do_sample=True, temperature=-1.0), dict(max_new_tokens=1, do_sample=True, min_p=1.0),
    dict(max_new_tokens=1, num_beams=2, num_return_sequences=3), dict(max_new_tokens=1, num_beams=3, num_beam_groups=2),
    dict(max_new_tokens=1, num_beams=3, do_sample=True), dict(max_new_tokens=1, num_beams=4, diversity_penalty=1.0),
    dict(max_new_tokens=1, num_assistant_tokens=2, num_beams=2), dict(max_new_tokens=1, max_ngram_size=1),
]
COMPARED_FIELDS = sorted(set(ovgenai_c.config.FIELDS) | {"apply_chat_template"})


def _bundled_extras_only() -> None:
    """Skip where the discovered library is not the bundled backend (e.g. OPENVINO_GENAI_DIR): the test compares
    something only its extras carry (token ids, scores, raw series, a template-less prompt); the official library
    refuses those, as the README's coverage table says."""
    if ovgenai_c.library_info().get("kind") != "bundled":
        pytest.skip("needs the bundled backend's extras")


@pytest.fixture(scope="module")
def pipe():
    with ovgenai_c.LLMPipeline(TINY_IR, "CPU", **F32) as p:
        yield p


@pytest.fixture(scope="module")
def oracle():
    return og.LLMPipeline(str(TINY_IR), "CPU", **F32)


def _same_config(ours: ovgenai_c.GenerationConfig, theirs) -> None:
    for name in COMPARED_FIELDS:
        a, b = getattr(ours, name), getattr(theirs, name)
        if name == "stop_criteria":
            a, b = int(a), int(b.value)
        if isinstance(a, float):
            assert math.isclose(a, b, rel_tol=1e-6), name
        else:
            assert a == b, name


@pytest.mark.parametrize("fields", INVALID, ids=[str(f) for f in INVALID])
def test_invalid_configs_raise_runtime_error_like_pybind(fields):
    theirs = og.GenerationConfig(**fields)
    with pytest.raises(RuntimeError):
        theirs.validate()
    ours = ovgenai_c.GenerationConfig(**fields)
    with pytest.raises(RuntimeError) as info:
        ours.validate()
    assert isinstance(info.value, errors.ConfigError)


def test_every_error_class_is_a_runtime_error_and_keeps_its_builtin():
    for cls in (errors.ConfigError, errors.ModelNotFoundError, errors.InvalidParameterError, errors.NotSupportedError,
                errors.OutOfBoundsError, errors.GenerationTimeoutError, errors.LibraryNotFoundError):
        assert issubclass(cls, RuntimeError), cls
    assert issubclass(errors.ModelNotFoundError, FileNotFoundError)
    assert issubclass(errors.InvalidParameterError, ValueError)
    assert issubclass(errors.GenerationTimeoutError, TimeoutError)
    with pytest.raises(RuntimeError):
        ovgenai_c.LLMPipeline("/nonexistent/model", "CPU")


def test_eos_assignment_semantics_match_pybind():
    for make in (og.GenerationConfig, ovgenai_c.GenerationConfig):
        c = make(max_new_tokens=3)
        c.eos_token_id = 5
        assert c.stop_token_ids == set()  # plain assignment leaves the stop set alone ...
        with pytest.raises(RuntimeError):
            c.validate()  # ... so the config is invalid until set_eos_token_id() (or update) adds it
        c.set_eos_token_id(5)
        assert c.stop_token_ids == {5}
        c.validate()
        k = make(max_new_tokens=3, eos_token_id=7, stop_token_ids={1})
        assert k.stop_token_ids == {1, 7}
        u = make(max_new_tokens=3)
        u.update_generation_config(eos_token_id=9)
        assert u.stop_token_ids == {9}


def test_eos_assigned_on_a_passed_config_stops_generation_like_pybind(pipe, oracle):
    # pybind runs every call's config through update_generation_config, so an eos_token_id set by assignment is a
    # stop token there (the model's own eos then is not): ported code relies on it
    full = pipe.generate(["Hello"], max_new_tokens=12, apply_chat_template=False)
    eos = pipe.get_tokenizer().encode(full.texts[0], add_special_tokens=False).input_ids.data[0].tolist()[2]
    ours_cfg, their_cfg = ovgenai_c.GenerationConfig(), og.GenerationConfig()
    for c in (ours_cfg, their_cfg):
        c.max_new_tokens, c.apply_chat_template, c.eos_token_id = 12, False, eos
    ours, theirs = pipe.generate(["Hello"], ours_cfg), oracle.generate(["Hello"], their_cfg)
    assert ours.texts == theirs.texts and ours.texts != full.texts
    assert [r.name for r in ours.finish_reasons] == [r.name for r in theirs.finish_reasons] == ["STOP"]
    assert ours_cfg.stop_token_ids == set()  # the caller's config is not changed
    kw = pipe.generate(["Hello"], ours_cfg, min_new_tokens=1)
    assert kw.texts == oracle.generate(["Hello"], their_cfg, min_new_tokens=1).texts


def test_numpy_scalars_are_taken_like_pybinds_attributes():
    # pybind's attributes take numpy scalars; ported code computes values with numpy
    np = pytest.importorskip("numpy")
    cases = [("max_new_tokens", np.int64(5)), ("top_k", np.uint64(3)), ("temperature", np.float32(0.5)),
             ("do_sample", np.bool_(True)), ("eos_token_id", np.int32(7)), ("rng_seed", np.int64(3)),
             ("repetition_penalty", 2), ("top_p", np.int64(1))]
    for name, value in cases:
        ours, theirs = ovgenai_c.GenerationConfig(), og.GenerationConfig()
        setattr(ours, name, value)
        setattr(theirs, name, value)
        assert getattr(ours, name) == getattr(theirs, name), name
        assert type(getattr(ours, name)) is type(getattr(theirs, name)), name
    # refused by name (pybind's attributes would take a bool for a number and a number for a bool; its keyword
    # arguments refuse them, as we do on both paths: max_new_tokens=True is a mistake, not a count)
    for name, value in [("max_new_tokens", 2.5), ("do_sample", "yes"), ("temperature", "1"), ("max_new_tokens", None),
                        ("max_new_tokens", True), ("do_sample", 1), ("temperature", np.bool_(True))]:
        with pytest.raises(errors.InvalidParameterError, match=name):  # (pybind: TypeError)
            setattr(ovgenai_c.GenerationConfig(), name, value)


def test_max_length_within_the_prompt_is_refused_like_pybind(pipe, oracle):
    # GenAI's default (PagedAttention) pipeline asserts room for one new token; the longer max_length still runs
    with pytest.raises(RuntimeError, match="max_length"):
        oracle.generate("Hello there", max_length=3)
    with pytest.raises(RuntimeError, match=r"'max_length' \(3\) must be greater than the number of prompt tokens"):
        pipe.generate("Hello there", max_length=3)
    assert str(pipe.generate("Hello there", max_length=80)) == oracle.generate("Hello there", max_length=80)


def test_get_version_and_the_module_listing():
    # pybind's get_version() names the GenAI release; ours the library in use
    info = ovgenai_c.library_info()["versions"]
    assert ovgenai_c.get_version() == (info.get("archive") or info["bundled"]) and isinstance(og.get_version(), str)
    listed = dir(ovgenai_c)  # the lazily imported names are listed too
    assert {"LLMPipeline", "WhisperPipeline", "Tokenizer", "Adapter", "get_version"} <= set(listed)


ECHO_CASES = [
    (["Hi"], dict(max_new_tokens=0, apply_chat_template=False)),  # the prompt alone, nothing generated
    (["Hi there"], dict(max_new_tokens=5, apply_chat_template=False)),
    ("Hi there", dict(max_new_tokens=5)),  # the chat template's text comes back too
    (["Hi there"], dict(max_new_tokens=5, num_beams=2, num_return_sequences=2, apply_chat_template=False)),
    (["Hi there"], dict(max_new_tokens=5, stop_strings={"long"}, apply_chat_template=False)),
    (["Hi there"], dict(max_new_tokens=5, do_sample=True, rng_seed=3, apply_chat_template=False)),
]


@pytest.mark.parametrize("inputs,kw", ECHO_CASES)
def test_echo_gives_the_prompt_back_like_genais_default_pipeline(pipe, oracle, inputs, kw):
    def run(p):
        chunks = []
        streams = kw.get("num_return_sequences", 1) == 1
        r = p.generate(inputs, echo=True, streamer=chunks.append if streams else None, **kw)
        if isinstance(r, str):
            return chunks, str(r)
        return chunks, list(r.texts), [round(s, 4) for s in r.scores], [f.name for f in r.finish_reasons]

    assert run(pipe) == run(oracle)


def test_start_chat_with_a_system_message_answers_as_genai(pipe, oracle):
    """start_chat(system_message): the conversation opens with it, as openvino_genai's (the C API's chat takes none:
    ours keeps the turns and sends them as a history). Every turn as GenAI's; a turn whose streamer cancels is
    dropped and one it stops is kept, as there; start_chat again starts over; echo is refused as in any chat."""
    import warnings

    from ovgenai_c import StreamingStatus

    def run(p, status):
        def streamer(chunks):
            def write(text):
                chunks.append(text)
                return getattr(status, "CANCEL") if len(chunks) == 3 and cancel else \
                    getattr(status, "STOP") if len(chunks) == 3 and stop else getattr(status, "RUNNING")
            return write

        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            p.start_chat("You are a pirate. Answer like one.")
            for q, cancel, stop in [("Hi, who are you?", False, False), ("What is 2+2?", True, False),
                                    ("Name a colour.", False, True), ("And another one?", False, False)]:
                chunks = []
                res = p.generate(q, max_new_tokens=12, streamer=streamer(chunks))
                out.append((str(res), "".join(chunks)))
            p.start_chat("Answer in French.")  # (no finish_chat between: starts over)
            out.append(str(p.generate("What is the capital of France?", max_new_tokens=12)))
            p.start_chat()
            out.append(str(p.generate("What is the capital of France?", max_new_tokens=12)))
            p.finish_chat()
            out.append(str(p.generate("What is the capital of France?", max_new_tokens=12)))
        return out

    ours, theirs = run(pipe, StreamingStatus), run(oracle, og.StreamingStatus)
    assert ours == theirs
    assert ours[0][0] != ours[-1]  # (the system message changed the answers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pipe.start_chat("Be brief.")
        try:
            with pytest.raises(RuntimeError, match="echo is not supported in a chat"):
                pipe.generate("Hi", max_new_tokens=2, echo=True)
            with pytest.raises(TypeError, match="system_message must be a str"):
                pipe.start_chat(b"Be brief.")
            with pytest.raises(errors.InvalidParameterError, match="NUL"):
                pipe.start_chat("Be\0brief.")
        finally:
            pipe.finish_chat()


def test_echo_is_refused_where_genai_refuses_it_and_in_a_chat(pipe):
    with ovgenai_c.LLMPipeline(TINY_IR, "CPU", ATTENTION_BACKEND="SDPA", **F32) as sdpa:
        with pytest.raises(RuntimeError, match="echo is not supported in the stateful pipeline"):
            sdpa.generate("Hi", max_new_tokens=2, echo=True)
    pipe.start_chat()
    try:  # the history keeps answers, not prompts: refused by name rather than made up
        with pytest.raises(RuntimeError, match="echo is not supported in a chat"):
            pipe.generate("Hi", max_new_tokens=2, echo=True)
        assert pipe.generate("Hi", max_new_tokens=2)  # the chat goes on
    finally:
        pipe.finish_chat()


def test_upstream_only_fields_and_predicates_match_pybind():
    for name in ("adapters", "structured_output_config", "branching_factor", "tree_depth", "pruning_ratio",
                 "relevance_weight", "return_omni_outputs", "apply_chat_template"):
        assert getattr(ovgenai_c.GenerationConfig(), name) == getattr(og.GenerationConfig(), name), name
    assert ovgenai_c.GenerationConfig().parsers == list(og.GenerationConfig().parsers)
    cases = [dict(), dict(num_assistant_tokens=3), dict(num_assistant_tokens=3, max_ngram_size=2),
             dict(assistant_confidence_threshold=0.4), dict(num_beams=2), dict(do_sample=True), dict(tree_depth=2)]
    for fields in cases:
        ours, theirs = ovgenai_c.GenerationConfig(**fields), og.GenerationConfig(**fields)
        for pred in ("is_prompt_lookup", "is_assisting_generation", "is_beam_search", "is_greedy_decoding",
                     "is_multinomial", "is_tree_search"):
            assert getattr(ours, pred)() == getattr(theirs, pred)(), (fields, pred)


def _public(obj) -> set:
    return {n for n in dir(obj) if not n.startswith("_")}


def test_dir_lists_the_fields_as_pybinds_does(pipe, oracle):
    """dir() (and so completion in IPython or an editor) lists every field pybind's objects list; each listed
    name is an attribute that answers."""
    pairs = [(ovgenai_c.GenerationConfig(), og.GenerationConfig()),
             (pipe.get_generation_config(), oracle.get_generation_config()),
             (ovgenai_c.WhisperGenerationConfig(), og.WhisperGenerationConfig()),
             (ovgenai_c.SchedulerConfig(), og.SchedulerConfig()),
             (pipe.generate("Hello", max_new_tokens=2), oracle.generate(["Hello"], max_new_tokens=2))]
    for ours, theirs in pairs:
        missing = _public(theirs) - _public(ours)
        assert not missing, (type(ours).__name__, sorted(missing))
        for name in _public(ours):
            getattr(ours, name)  # no listed name raises AttributeError
    result = pipe.generate("Hello", max_new_tokens=2)  # fields read back on first use are listed before it
    assert {"perf_metrics", "scores", "finish_reason"} <= set(dir(result))
    assert result.perf_metrics.get_num_generated_tokens() >= 1


def test_pipeline_config_is_the_models_as_in_genai(pipe, oracle):
    _same_config(pipe.get_generation_config(), oracle.get_generation_config())
    assert pipe.get_generation_config().eos_token_id != -1  # from the tokenizer, as GenAI does


def test_pipeline_config_reads_generation_config_json(tmp_path):
    import json
    import shutil

    folder = tmp_path / "m"
    shutil.copytree(TINY_IR, folder)
    (folder / "generation_config.json").write_text(json.dumps(
        {"eos_token_id": [3, 4], "do_sample": True, "temperature": 0.7, "top_k": 20, "max_new_tokens": 12,
         "repetition_penalty": 1.1}))
    with ovgenai_c.LLMPipeline(folder, "CPU") as p:
        _same_config(p.get_generation_config(), og.LLMPipeline(str(folder), "CPU").get_generation_config())


def test_set_generation_config_round_trip_and_defaults_fill_in(pipe, oracle):
    pipe.set_generation_config(pipe.get_generation_config())
    fresh_ours, fresh_theirs = ovgenai_c.GenerationConfig(max_new_tokens=7), og.GenerationConfig(max_new_tokens=7)
    pipe.set_generation_config(fresh_ours)
    oracle.set_generation_config(fresh_theirs)
    try:
        _same_config(pipe.get_generation_config(), oracle.get_generation_config())  # eos and stop ids filled in
    finally:
        pipe.set_generation_config(ovgenai_c.GenerationConfig(max_new_tokens=64))
        oracle.set_generation_config(og.GenerationConfig(max_new_tokens=64))


def test_result_types_follow_the_input(pipe, oracle):
    as_text = pipe.generate("Hello", max_new_tokens=4)
    assert isinstance(as_text, str) and isinstance(oracle.generate("Hello", max_new_tokens=4), str)
    assert isinstance(as_text, ovgenai_c.DecodedResults) and as_text.perf_metrics.get_num_generated_tokens() >= 1
    several = pipe.generate("Hello", max_new_tokens=4, num_beams=2, num_return_sequences=2)
    theirs = oracle.generate("Hello", max_new_tokens=4, num_beams=2, num_return_sequences=2)
    assert not isinstance(several, str) and not isinstance(theirs, str)  # a str prompt, several sequences
    assert several.texts == theirs.texts and str(several) == str(theirs)
    batch, theirs = pipe.generate(["Hello"], max_new_tokens=4), oracle.generate(["Hello"], max_new_tokens=4)
    assert not isinstance(batch, str) and not isinstance(theirs, str)
    assert batch.texts == theirs.texts and str(batch) == str(theirs)
    assert [r.name for r in batch.finish_reasons] == [r.name for r in theirs.finish_reasons] == ["LENGTH"]
    hist = [{"role": "user", "content": "Hello"}]
    chat = pipe.generate(ovgenai_c.ChatHistory(hist), max_new_tokens=40)
    theirs = oracle.generate(og.ChatHistory(hist), max_new_tokens=40)
    assert not isinstance(chat, str)
    assert chat.texts == theirs.texts
    assert [r.name for r in chat.finish_reasons] == [r.name for r in theirs.finish_reasons]


def test_raw_metrics_agree_with_the_means_as_upstream_checks(pipe):
    _bundled_extras_only()
    import numpy as np

    a = pipe.generate(["Hi"], max_new_tokens=6, ignore_eos=True).perf_metrics
    b = pipe.generate(["Hi"], max_new_tokens=6, ignore_eos=True).perf_metrics
    raw = (a + b).raw_metrics
    assert len(raw.generate_durations) == 2
    assert math.isclose(np.mean(raw.generate_durations) / 1000, (a + b).get_generate_duration().mean, rel_tol=1e-3)
    smp = np.array(a.raw_metrics.sampling_durations) / 1000  # as upstream's test_perf_metrics checks it
    assert len(smp) > 0 and a.get_sampling_duration().mean > 0
    assert math.isclose(a.get_sampling_duration().mean, np.mean(smp), rel_tol=1e-6)
    # the bundled backend gives the per-token series too (an extra): upstream's own invariants hold
    assert len(a.raw_metrics.m_durations) == a.get_num_generated_tokens() - 1 == 5
    assert math.isclose(np.mean(a.raw_metrics.m_durations) / 1000, a.get_tpot().mean, rel_tol=1e-3)
    assert math.isclose(np.std(a.raw_metrics.m_durations) / 1000, a.get_tpot().std, rel_tol=1e-2, abs_tol=1e-3)
    assert len(a.raw_metrics.m_times_to_first_token) == 1 and len(a.raw_metrics.m_batch_sizes) > 0
    assert len(a.raw_metrics.m_new_token_times) == 6 and a.raw_metrics.m_new_token_times == \
        sorted(a.raw_metrics.m_new_token_times)


def test_chat_history_surface_matches_pybind():
    ours, theirs = ovgenai_c.ChatHistory(), og.ChatHistory()
    assert bool(ours) is bool(theirs) is False
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    ours.set_messages(msgs)
    theirs.set_messages(msgs)
    assert bool(ours) is bool(theirs) is True and ours.get_messages() == theirs.get_messages()
    ours.set_extra_context({"enable_thinking": False})
    theirs.set_extra_context({"enable_thinking": False})
    assert ours.get_extra_context() == theirs.get_extra_context() and ours.get_tools() == theirs.get_tools() == []
    assert ours.pop() == theirs.pop() and ours.pop() == theirs.pop()
    with pytest.raises(IndexError):
        theirs.pop()
    with pytest.raises(IndexError):
        ours.pop()
    with pytest.raises(errors.InvalidParameterError):
        ours.set_messages([{"role": "user", "content": "ok"}, {"content": "no role"}])
    assert len(ours) == 0  # a bad list changes nothing
    ours.set_messages(msgs)  # indexing (pybind has none) reads like a list of copies
    assert ours[0] == msgs[0] and ours[-1] == msgs[1] and ours[0:1] == msgs[:1] and ours[::-1] == msgs[::-1]
    ours[0]["content"] = "changed"
    ours[0:1][0]["content"] = "changed"
    assert ours.get_messages() == msgs and ovgenai_c.ChatHistory()[:] == []


def test_tool_call_stop_ends_like_stop(pipe):
    assert int(ovgenai_c.StreamingStatus.TOOL_CALL_STOP) == og.StreamingStatus.TOOL_CALL_STOP.value
    seen = []

    def streamer(text):
        seen.append(text)
        return ovgenai_c.StreamingStatus.TOOL_CALL_STOP

    r = pipe.generate("Hello", max_new_tokens=30, streamer=streamer)
    # after a stop the library still flushes the text its detokeniser held back (as GenAI), then ends
    assert 1 <= len(seen) <= 2 and r.finish_reason == "stop"
    assert r.perf_metrics.get_num_generated_tokens() < 30


def test_text_streamer_gets_genai_chunks(pipe, oracle):
    ours_chunks, their_chunks = [], []
    tok = pipe.get_tokenizer()
    assert isinstance(tok, ovgenai_c.Tokenizer) and pipe.get_tokenizer() is tok
    r1 = pipe.generate("Tell me", max_new_tokens=20,
                       streamer=ovgenai_c.TextStreamer(tok, lambda s: ours_chunks.append(s)))
    r2 = oracle.generate("Tell me", max_new_tokens=20,
                         streamer=og.TextStreamer(oracle.get_tokenizer(), lambda s: their_chunks.append(s)))
    assert str(r1) == r2
    assert "".join(ours_chunks) == "".join(their_chunks)


@pytest.mark.parametrize("include", [False, True])
def test_streamed_chunks_with_stop_strings_are_genais(pipe, oracle, include):
    # GenAI holds a streamed token back until the longest stop string's tokens after it are known (with or without
    # include_stop_str_in_output), and what a step releases is one write: the end gives the held tokens together
    plain = str(pipe.generate("Tell me a story", max_new_tokens=24))
    word = plain.split()[len(plain.split()) // 2]
    for stops in ({"zzzq"}, {word}):
        kw = dict(max_new_tokens=24, stop_strings=stops, include_stop_str_in_output=include)
        ours, theirs = [], []
        r1 = pipe.generate("Tell me a story", streamer=ours.append, **kw)
        r2 = oracle.generate("Tell me a story", streamer=theirs.append, **kw)
        assert str(r1) == r2 and ours == theirs, stops


class IdStreamer(ovgenai_c.StreamerBase):
    """A token-level streamer as upstream's samples write them (write gets ids, end() closes)."""

    def __init__(self, stop_after=None):
        super().__init__()
        self.ids, self.writes, self.ended, self.stop_after = [], [], 0, stop_after

    def write(self, token):
        self.ids += token if isinstance(token, list) else [token]
        self.writes.append(list(token) if isinstance(token, list) else [token])
        if self.stop_after is not None and len(self.ids) >= self.stop_after:
            return ovgenai_c.StreamingStatus.STOP
        return ovgenai_c.StreamingStatus.RUNNING

    def end(self):
        self.ended += 1


class OracleIdStreamer(og.StreamerBase):
    def __init__(self):
        super().__init__()
        self.ids, self.writes = [], []

    def write(self, token):
        self.ids += token if isinstance(token, list) else [token]
        self.writes.append(list(token) if isinstance(token, list) else [token])
        return og.StreamingStatus.RUNNING

    def end(self):
        pass


def test_token_level_streamer_gets_genais_ids(pipe, oracle):
    _bundled_extras_only()
    ours, theirs = IdStreamer(), OracleIdStreamer()
    r1 = pipe.generate("Tell me a story", max_new_tokens=12, streamer=ours)
    r2 = oracle.generate("Tell me a story", max_new_tokens=12, streamer=theirs)
    assert str(r1) == r2 and ours.ids == theirs.ids and len(ours.ids) > 0 and ours.ended == 1
    ours, theirs = IdStreamer(), OracleIdStreamer()  # a stop string's window: the held ids come in one write
    r1 = pipe.generate("Tell me a story", max_new_tokens=12, stop_strings={"zzzq"}, streamer=ours)
    r2 = oracle.generate("Tell me a story", max_new_tokens=12, stop_strings={"zzzq"}, streamer=theirs)
    assert str(r1) == r2 and ours.writes == theirs.writes and len(ours.writes) < len(ours.ids)
    stopping = IdStreamer(stop_after=3)
    pipe.generate("Tell me a story", max_new_tokens=12, streamer=stopping)
    assert len(stopping.ids) == 3  # STOP from write() ends the generation


def test_token_level_streamer_is_refused_by_name_without_the_extra(make_pipe):
    with pytest.raises(errors.NotSupportedError, match="IdStreamer is a token-level streamer"):
        make_pipe().generate("Hi", max_new_tokens=2, streamer=IdStreamer())


def test_token_input_gives_encoded_results_like_genai(pipe, oracle):
    _bundled_extras_only()
    ours_tok, their_tok = pipe.get_tokenizer(), oracle.get_tokenizer()
    prompts = ["Hello there", "What is two plus two?"]
    ours = pipe.generate(ours_tok.encode(prompts[0]), max_new_tokens=8)
    theirs = oracle.generate(their_tok.encode(prompts[0]), max_new_tokens=8)
    assert type(ours).__name__ == "EncodedResults" and ours.tokens == [list(t) for t in theirs.tokens]
    assert ours.scores == pytest.approx(list(theirs.scores), abs=1e-4)
    assert [f.name for f in ours.finish_reasons] == [f.name for f in theirs.finish_reasons]
    # a padded batch: each row on its own, masks honoured
    batch = pipe.generate(ours_tok.encode(prompts), max_new_tokens=6)
    single = [pipe.generate(ours_tok.encode(p), max_new_tokens=6).tokens[0] for p in prompts]
    assert batch.tokens == single


def test_token_input_is_refused_by_name_without_the_extra(make_pipe):
    import numpy as np

    with pytest.raises(errors.NotSupportedError, match="token input"):
        make_pipe().generate(np.array([[1, 2, 3]], dtype=np.int64), max_new_tokens=2)


def test_apply_chat_template_false_matches_genai(pipe, oracle):
    _bundled_extras_only()
    ours = pipe.generate("The sky is", max_new_tokens=10, apply_chat_template=False)
    theirs = oracle.generate("The sky is", max_new_tokens=10, apply_chat_template=False)
    templated = pipe.generate("The sky is", max_new_tokens=10)
    assert ours == theirs and ours != templated


def test_apply_chat_template_false_is_refused_without_the_extra(make_pipe):
    with pytest.raises(errors.NotSupportedError, match="apply_chat_template=False"):
        make_pipe().generate("Hi", max_new_tokens=2, apply_chat_template=False)


def test_scores_and_finish_reasons_are_genais(pipe, oracle):
    _bundled_extras_only()
    kw = dict(max_new_tokens=12, do_sample=True, num_return_sequences=2, rng_seed=7, top_k=20)
    ours, theirs = pipe.generate(["Hello"], **kw), oracle.generate(["Hello"], **kw)
    assert ours.texts == theirs.texts
    assert ours.scores == pytest.approx(list(theirs.scores), abs=1e-3)
    assert [f.name for f in ours.finish_reasons] == [f.name for f in theirs.finish_reasons]
    greedy, greedy_theirs = pipe.generate(["Hello"], max_new_tokens=5), oracle.generate(["Hello"], max_new_tokens=5)
    assert greedy.scores == pytest.approx(list(greedy_theirs.scores))
    # greedy with logprobs: the log-probability of the answer under the model's own logits (penalties not counted)
    for extra in (dict(logprobs=2), dict(logprobs=1, repetition_penalty=1.5), dict(logprobs=3, min_new_tokens=3)):
        ours, theirs = pipe.generate(["Hi there"], max_new_tokens=6, **extra), \
            oracle.generate(["Hi there"], max_new_tokens=6, **extra)
        assert ours.texts == theirs.texts and theirs.scores[0] < 0, extra
        assert ours.scores == pytest.approx(list(theirs.scores), rel=1e-5), extra
    batching = ovgenai_c.ContinuousBatchingPipeline(TINY_IR, ovgenai_c.SchedulerConfig(), "CPU", dict(F32))
    try:  # the batching engine's greedy steps score the same way
        config = ovgenai_c.GenerationConfig(max_new_tokens=6, logprobs=1, repetition_penalty=1.5)
        batched = batching.generate(["Hi there"], [config])[0]
        theirs = oracle.generate(["Hi there"], max_new_tokens=6, logprobs=1, repetition_penalty=1.5)
        assert batched.m_scores == pytest.approx(list(theirs.scores), rel=1e-5)
    finally:
        batching.close()


def test_parsed_and_grammar_compile_time_are_genais_without_parsers(pipe, oracle):
    """Parsers and grammars cannot pass through the C API: ``parsed`` and ``get_grammar_compile_time()`` hold what
    GenAI's hold when none is used."""
    ours, theirs = pipe.generate(["Hello"], max_new_tokens=3), oracle.generate(["Hello"], max_new_tokens=3)
    assert ours.parsed == list(theirs.parsed) == []
    assert pipe.generate("Hello", max_new_tokens=3).parsed == []
    a, b = ours.perf_metrics.get_grammar_compile_time(), theirs.perf_metrics.get_grammar_compile_time()
    assert a.as_tuple() == tuple(b.as_tuple()) and (a.mean, a.std, a.min, a.max) == (b.mean, b.std, b.min, b.max)
    assert ours.perf_metrics.get_grammar_compiler_init_times() == dict(theirs.perf_metrics.get_grammar_compiler_init_times())


@pytest.mark.parametrize("props, word", [({"adapters": object()}, "adapters")])
def test_features_the_c_api_cannot_create_are_refused_by_name(props, word):
    with pytest.raises(errors.NotSupportedError, match=word):
        ovgenai_c.LLMPipeline(TINY_IR, "CPU", **props)


def test_draft_model_takes_what_draft_model_returns():
    # pybind's draft_model() gives an opaque property value; ours a DraftModel (the bundled backend runs it:
    # tests/backend/test_speculative.py); anything else is refused by name before any C call
    with pytest.raises(errors.InvalidParameterError, match="draft_model must come from ovgenai_c.draft_model"):
        ovgenai_c.LLMPipeline(TINY_IR, "CPU", draft_model=object())
    draft = ovgenai_c.draft_model(TINY_IR, "CPU", INFERENCE_PRECISION_HINT="f32")
    assert isinstance(draft, ovgenai_c.DraftModel) and draft.device == "CPU"
    assert dict(draft.properties) == {"INFERENCE_PRECISION_HINT": "f32"}


@pytest.mark.parametrize("fields, word", [(dict(num_assistant_tokens=3, max_ngram_size=2), "assisted generation"),
                                          (dict(assistant_confidence_threshold=0.5), "assisted generation"),
                                          (dict(structured_output_config=object()), "structured_output_config"),
                                          (dict(tree_depth=2), "tree_depth")])
def test_config_features_the_c_api_cannot_carry_are_refused_by_name(pipe, fields, word):
    with pytest.raises(errors.NotSupportedError, match=word):
        pipe.generate("Hi", max_new_tokens=2, **fields)


def test_openvino_property_objects_are_passed_as_their_strings():
    import openvino as ov
    import openvino.properties.hint as hints

    from ovgenai_c.pipeline import property_strings

    got = dict(property_strings({"INFERENCE_PRECISION_HINT": ov.Type.f32,
                                 "PERFORMANCE_HINT": hints.PerformanceMode.LATENCY,
                                 hints.execution_mode(): hints.ExecutionMode.ACCURACY}))
    assert got == {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY", "EXECUTION_MODE_HINT": "ACCURACY"}
    key, any_value = hints.inference_precision(ov.Type.f32)
    assert dict(property_strings({key: any_value})) == {"INFERENCE_PRECISION_HINT": "f32"}
    with ovgenai_c.LLMPipeline(TINY_IR, "CPU", INFERENCE_PRECISION_HINT=ov.Type.f32) as p:
        assert p.properties["INFERENCE_PRECISION_HINT"] == "f32"
        assert p.generate("Hi", max_new_tokens=2)


def test_pybinds_classes_for_what_the_c_api_cannot_carry_refuse_by_name():
    """LoRA adapters, structured output and the SchedulerConfig extras exist under pybind's names (so ported code
    imports) and refuse at construction with NotSupportedError saying why; EncodedResults is exported too."""
    from ovgenai_c.results import EncodedResults

    assert ovgenai_c.EncodedResults is EncodedResults and og.EncodedResults.__name__ == "EncodedResults"
    reasons = {"Adapter": "LoRA adapters", "AdapterConfig": "LoRA adapters",
               "StructuredOutputConfig": "structured output", "StructuralTagsConfig": "structured output",
               "StructuralTagItem": "structured output", "CacheEvictionConfig": "cache eviction",
               "SparseAttentionConfig": "sparse attention", "KVCrushConfig": "cache eviction"}
    for name, reason in reasons.items():
        assert hasattr(og, name), name  # each is a class of openvino_genai's
        cls = getattr(ovgenai_c, name)
        with pytest.raises(errors.NotSupportedError, match=f"^{name}: .*{reason}"):
            cls()
        with pytest.raises(NotImplementedError):  # NotSupportedError is one (and a RuntimeError)
            cls("path", alpha=0.5)
    for name in ("AggregationMode", "KVCrushAnchorPointMode", "SparseAttentionMode"):  # their enums: upstream's values
        ours, theirs = getattr(ovgenai_c, name), getattr(og, name)
        assert {k: int(v) for k, v in ours.__members__.items()} == {k: int(v) for k, v in theirs.__members__.items()}


def test_start_and_finish_chat_warn_as_genai_does(pipe, oracle):
    """openvino_genai 2026.4 deprecates start_chat() / finish_chat() with a DeprecationWarning; so does this."""
    messages = []
    for p in (pipe, oracle):
        for call in (p.start_chat, p.finish_chat):
            with pytest.warns(DeprecationWarning) as record:
                call()
            messages.append(str(record[0].message))
            assert record[0].filename == __file__  # pointed at the caller's line
    assert len(set(messages)) == 1 and "Please use generate() with ChatHistory argument" in messages[0]
