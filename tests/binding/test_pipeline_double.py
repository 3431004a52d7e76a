"""The binding over the ABI double: owner thread, streaming, cancellation, errors, leaks."""
from __future__ import annotations

import asyncio
import gc
import math
import threading
import time
import _thread
from pathlib import Path

import pytest

import ovgenai_c
from ovgenai_c import errors
from testsupport import run_threads, settle_garbage, transient_native_objects

TINY_IR = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "ir"


def test_all_declared_functions_resolve_on_the_double(double):
    from ovgenai_c import _ffi

    assert len(_ffi.required_functions()) == 83
    assert double.library.missing_symbols == ()
    assert double.library.kind == "other"


def test_generate_returns_text_and_perf_metrics(make_pipe, double):
    pipe = make_pipe()
    res = pipe.generate("hello world", max_new_tokens=50)
    assert str(res) == "Echo: hello world"
    assert res.texts == ["Echo: hello world"]
    pm = res.perf_metrics
    assert pm.get_num_generated_tokens() == 3
    assert pm.get_num_input_tokens() == 2
    assert pm.get_ttft().mean == pytest.approx(20.0)
    assert pm.get_load_time() == pytest.approx(12.5)
    total = pm + pm
    assert total.get_num_generated_tokens() == 6
    assert total.get_ttft().mean == pytest.approx(20.0)


def test_create_generate_free_all_on_the_owner_thread(double, model_dir):
    caller = threading.get_native_id()
    pipe = ovgenai_c.LLMPipeline(model_dir, library=double.library)
    owner = pipe.owner_thread_id
    pipe.generate("a b c", max_new_tokens=5)
    pipe.start_chat()
    pipe.finish_chat()
    pipe.close()
    log = double.thread_log()
    ops = {op for op, _, _ in log}
    assert {"create", "generate", "free", "start_chat", "finish_chat"} <= ops
    assert all(tid == owner for _, _, tid in log), log
    assert owner != caller
    assert double.live() == 0


def test_forgotten_pipeline_is_freed_on_its_owner_by_the_finalizer(double, model_dir):
    pipe = ovgenai_c.LLMPipeline(model_dir, library=double.library)
    owner = pipe.owner_thread_id
    pipe.generate("x", max_new_tokens=3)
    del pipe
    gc.collect()
    settle_garbage()  # (PyPy: the results go at one collection, the pipeline they kept alive at the next)
    deadline = time.monotonic() + 5
    while double.live("pipeline") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert double.live() == 0
    frees = [tid for op, _, tid in double.thread_log() if op == "free"]
    assert frees == [owner]


def test_pipelines_rebound_without_close_do_not_pile_up(double, model_dir):
    """`pipe = LLMPipeline(...)` in a loop, never closed: CPython frees the previous pipeline when the name is rebound;
    PyPy only at a collection, which a Python heap this small would not start for a long time — there a pipeline's
    creation collects first (ovgenai_c._native_memory). Either way at most the one still bound and the new one are
    alive, and every free runs on its own owner thread."""
    owners = []
    pipe = None
    for i in range(8):
        pipe = ovgenai_c.LLMPipeline(model_dir, library=double.library)
        owners.append(pipe.owner_thread_id)
        pipe.generate(f"x {i}", max_new_tokens=2)
        deadline = time.monotonic() + 5
        while double.live("pipeline") > 2 and time.monotonic() < deadline:  # (a free runs on its owner: a moment)
            time.sleep(0.01)
        assert double.live("pipeline") <= 2, i
    pipe.close()
    settle_garbage()  # (PyPy: the one dropped by the last rebinding waits for a collection)
    deadline = time.monotonic() + 5
    while double.live("pipeline") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert double.live("pipeline") == 0
    frees = [tid for op, _, tid in double.thread_log() if op == "free"]
    assert sorted(frees) == sorted(owners)


def test_a_stream_dropped_half_way_is_cancelled_before_the_next_call(make_pipe, double):
    """`for piece in pipe.stream(...): break` drops the iterator: CPython cancels its call at once (TextStream's
    __del__), PyPy at a collection — which the next call on the pipeline now runs first, instead of waiting behind
    the whole generation (~300 tokens here)."""
    double.ctl.ovd_set_token_delay_us(5000)
    pipe = make_pipe()
    before = double.ctl.ovd_callback_count()
    for piece in pipe.stream(" ".join(["w"] * 300), max_new_tokens=1000):
        assert piece
        break
    assert str(pipe.generate("next", max_new_tokens=3)) == "Echo: next"
    assert double.ctl.ovd_callback_count() - before < 100  # cancelled, not run to its end


def test_close_is_idempotent_and_closed_pipeline_refuses(make_pipe, double):
    pipe = make_pipe()
    pipe.close()
    pipe.close()
    assert pipe.closed
    with pytest.raises(errors.PipelineClosedError):
        pipe.generate("x", max_new_tokens=2)
    assert double.live() == 0


def test_streamer_gets_whole_utf8_characters_when_bytes_are_split(make_pipe, double):
    text = "héllo 中文 🎉 ok"
    double.reply(text)
    double.ctl.ovd_set_chunk_bytes(1)
    pieces = []
    pipe = make_pipe()
    res = pipe.generate("q", max_new_tokens=1000, streamer=pieces.append)
    assert "".join(pieces) == text
    assert str(res) == text
    for p in pieces:
        p.encode("utf-8")  # every piece is valid text
    assert all("\ufffd" not in p for p in pieces)
    assert double.ctl.ovd_callback_count() >= len(text.encode())


def test_streamer_exception_surfaces_intact_and_cancels(make_pipe, double):
    class Boom(Exception):
        pass

    boom = Boom("from the streamer")

    def streamer(text):
        raise boom

    pipe = make_pipe()
    with pytest.raises(Boom) as info:
        pipe.generate("one two three four", max_new_tokens=50, streamer=streamer)
    assert info.value is boom
    assert double.ctl.ovd_last_callback_status() == 2  # CANCEL returned to C
    assert str(pipe.generate("again", max_new_tokens=5)) == "Echo: again"


@pytest.mark.parametrize("ret,expected_cb,reason", [
    (True, 1, "stop"), (ovgenai_c.StreamingStatus.STOP, 1, "stop"),
    (ovgenai_c.StreamingStatus.CANCEL, 2, "cancel"), (None, 0, None), (False, 0, None)])
def test_streamer_return_values_map_like_pybind(make_pipe, double, ret, expected_cb, reason):
    pipe = make_pipe()
    calls = []

    def streamer(t):
        calls.append(t)
        return ret

    res = pipe.generate("a b c d e", max_new_tokens=50, streamer=streamer)
    assert double.ctl.ovd_last_callback_status() == expected_cb
    if reason:
        assert len(calls) == 1
        assert res.finish_reason == reason
    else:
        assert "".join(calls) == "Echo: a b c d e"


def test_stop_keeps_the_chat_turn_and_cancel_drops_it(make_pipe, double):
    pipe = make_pipe()
    pipe.start_chat()
    handle = pipe._state.handle
    pipe.generate("first turn", max_new_tokens=50)
    assert double.ctl.ovd_chat_size(handle) == 2
    pipe.generate("second turn", max_new_tokens=50, streamer=lambda t: ovgenai_c.StreamingStatus.STOP)
    assert double.ctl.ovd_chat_size(handle) == 4
    pipe.generate("third turn", max_new_tokens=50, streamer=lambda t: ovgenai_c.StreamingStatus.CANCEL)
    assert double.ctl.ovd_chat_size(handle) == 4
    pipe.finish_chat()


def test_a_system_message_chat_is_kept_here_and_sent_as_histories(make_pipe, double):
    """start_chat(system_message): no C chat (it takes no system message); each prompt goes to C as the kept
    conversation plus the prompt (the double answers its last message), and the turn is kept unless cancelled —
    by the streamer, a timeout or an error — as a C chat keeps it."""
    pipe = make_pipe()
    pipe.start_chat("Be terse.")

    def kept():
        return [(m["role"], m["content"]) for m in pipe._state.system_chat.get_messages()]

    assert str(pipe.generate("first turn", max_new_tokens=50)) == "Echo: first turn"
    with pipe.stream("second turn", max_new_tokens=50) as it:
        assert "".join(it) == "Echo: second turn"
    pipe.generate("stopped", max_new_tokens=50, streamer=lambda t: ovgenai_c.StreamingStatus.STOP)
    want = [("system", "Be terse."), ("user", "first turn"), ("assistant", "Echo: first turn"),
            ("user", "second turn"), ("assistant", "Echo: second turn"), ("user", "stopped")]
    assert kept()[:6] == want and kept()[6][0] == "assistant" and len(kept()) == 7
    pipe.generate("cancelled", max_new_tokens=50, streamer=lambda t: ovgenai_c.StreamingStatus.CANCEL)
    double.ctl.ovd_set_token_delay_us(50000)
    with pytest.raises(ovgenai_c.GenerationTimeoutError):
        pipe.generate(" ".join(["slow"] * 40), max_new_tokens=100, timeout=0.2)
    double.ctl.ovd_set_token_delay_us(0)

    def fail(text):
        raise ValueError("streamer failed")

    with pytest.raises(ValueError, match="streamer failed"):
        pipe.generate("failing", max_new_tokens=50, streamer=fail)
    assert len(kept()) == 7
    assert double.ctl.ovd_chat_size(pipe._state.handle) == -1  # (no C chat is on)
    pipe.finish_chat()
    assert pipe._state.system_chat is None


def test_stream_iterator_yields_text_and_result(make_pipe, double):
    pipe = make_pipe()
    with pipe.stream("one two three", max_new_tokens=50) as it:
        parts = list(it)
    assert "".join(parts) == "Echo: one two three"
    assert str(it.result) == "Echo: one two three"


def test_closing_a_stream_early_cancels_natively_and_leaks_nothing(make_pipe, double):
    double.ctl.ovd_set_token_delay_us(20000)
    pipe = make_pipe()
    words = " ".join(f"w{i}" for i in range(100))
    before = double.ctl.ovd_callback_count()
    it = pipe.stream(words, max_new_tokens=1000)
    first = next(it)
    assert first
    it.close()
    assert double.ctl.ovd_last_callback_status() == 2
    assert double.ctl.ovd_callback_count() - before < 50  # cancelled natively, not run to the end (~100 tokens)
    # the one native config is the pipeline's cached max_new_tokens=1000 (freed with it); the call's native results,
    # never read, are kept by the stream until it goes (testsupport.kept_native_objects), nothing else
    assert double.live("config") == 1
    assert transient_native_objects(double, ("results", "config", "perf_metrics")) == \
        {"results": 0, "config": 0, "perf_metrics": 0}
    del it, first
    gc.collect()
    settle_garbage()  # (PyPy: the stream, and the results it kept, at later collections)
    assert double.live("results") == 0
    double.ctl.ovd_set_token_delay_us(0)
    assert str(pipe.generate("next", max_new_tokens=5)) == "Echo: next"
    pipe.close()
    assert double.live() == 0


def test_astream_task_cancellation_maps_to_native_cancel(make_pipe, double):
    double.ctl.ovd_set_token_delay_us(20000)
    pipe = make_pipe()
    got = []

    async def consume():
        async for piece in pipe.astream(" ".join(f"w{i}" for i in range(200)), max_new_tokens=1000):
            got.append(piece)

    async def main():
        task = asyncio.ensure_future(consume())
        while len(got) < 2:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert 2 <= len(got) < 50
    assert double.ctl.ovd_last_callback_status() == 2
    assert double.live("results") == 0


def test_astream_full_run(make_pipe, double):
    pipe = make_pipe()

    async def main():
        return [p async for p in pipe.astream("x y", max_new_tokens=50)]

    assert "".join(asyncio.run(main())) == "Echo: x y"


def _run_entry(pipe, entry, prompt, **kwargs):
    """Run a whole call through one of the three entry points (their texts, concatenated, for the streaming ones)."""
    if entry == "generate":
        return str(pipe.generate(prompt, **kwargs))
    if entry == "stream":
        with pipe.stream(prompt, **kwargs) as it:
            return "".join(it)

    async def consume():
        return "".join([piece async for piece in pipe.astream(prompt, **kwargs)])

    return asyncio.run(consume())


@pytest.mark.parametrize("entry", ["generate", "stream", "astream"])
def test_timeout_cancels_natively(make_pipe, double, entry):
    double.ctl.ovd_set_token_delay_us(50000)
    pipe = make_pipe()
    before = double.ctl.ovd_callback_count()
    with pytest.raises(errors.GenerationTimeoutError) as info:
        _run_entry(pipe, entry, " ".join(["w"] * 200), max_new_tokens=1000, timeout=0.2)
    assert double.ctl.ovd_callback_count() - before < 150  # cancelled natively, not run to the end (~200 tokens)
    assert isinstance(info.value, TimeoutError)
    assert f"{entry}() exceeded its timeout of 0.2 s" in str(info.value)
    assert info.value.partial_text.startswith("Echo:")
    assert double.ctl.ovd_last_callback_status() == 2
    assert double.live("results") == 0
    double.ctl.ovd_set_token_delay_us(0)
    assert _run_entry(pipe, entry, "ok", max_new_tokens=3) == "Echo: ok"


@pytest.mark.parametrize("entry", ["generate", "stream"])
def test_keyboard_interrupt_cancels_and_raises_after_c_returns(make_pipe, double, python_sigint_handler, entry):
    """Ctrl-C cancels natively while the caller waits: the callback's last answer is CANCEL, not a reply run to its
    end (~10 s). generate() blocks with nothing arriving until C returns, and interrupt_main sends no real signal:
    its wait must wake for the Python signal handler itself."""
    double.ctl.ovd_set_token_delay_us(20000)
    pipe = make_pipe()
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        _run_entry(pipe, entry, " ".join(["w"] * 500), max_new_tokens=1000)
    assert double.ctl.ovd_last_callback_status() == 2
    assert double.live("results") == 0
    double.ctl.ovd_set_token_delay_us(0)
    assert str(pipe.generate("ok", max_new_tokens=3)) == "Echo: ok"


@pytest.mark.parametrize("status", sorted(errors.exception_types()))
def test_every_generate_status_maps_to_its_exception(make_pipe, double, status):
    pipe = make_pipe()
    double.fail("ov_genai_llm_pipeline_generate", status, 0)
    with pytest.raises(errors.exception_types()[status]) as info:
        pipe.generate("x", max_new_tokens=3)
    assert info.value.status == status
    assert info.value.status_name == errors.status_names()[status]
    assert errors.status_names()[status] in str(info.value)
    double.ctl.ovd_reset()
    assert str(pipe.generate("y", max_new_tokens=3)) == "Echo: y"


def test_failing_create_raises_and_leaves_no_thread_or_handle(double, model_dir):
    before = threading.active_count()
    double.fail("ov_genai_llm_pipeline_create", -17, 0)
    with pytest.raises(errors.UnknownExceptionError) as info:
        ovgenai_c.LLMPipeline(model_dir, library=double.library)
    assert "ov_genai_llm_pipeline_create" in str(info.value)
    time.sleep(0.1)
    assert threading.active_count() == before
    assert double.live() == 0


def test_midstream_failure_keeps_the_streamed_text_out_of_results_but_raises(make_pipe, double):
    pipe = make_pipe()
    double.fail("generate_midstream", -7, 2)
    seen = []
    with pytest.raises(errors.UnexpectedError):
        pipe.generate("a b c d e f", max_new_tokens=50, streamer=seen.append)
    assert len(seen) == 2
    assert double.live("results") == 0


def test_properties_reach_create_as_strings(make_pipe, double):
    make_pipe(CACHE_DIR="/tmp/x", INFERENCE_NUM_THREADS=2, ENABLE_MMAP=False)
    assert double.properties() == {"CACHE_DIR": "/tmp/x", "INFERENCE_NUM_THREADS": "2", "ENABLE_MMAP": "NO"}


def test_unknown_property_fails_create_with_a_message(double, model_dir):
    with pytest.raises(errors.UnknownExceptionError) as info:
        ovgenai_c.LLMPipeline(model_dir, library=double.library, NOT_A_PROPERTY="1")
    assert "NOT_A_PROPERTY" in str(info.value)


def test_many_threads_share_one_pipeline_serialised_on_its_owner(make_pipe, double):
    pipe = make_pipe()

    def worker(i):
        for j in range(20):
            assert str(pipe.generate(f"t{i} c{j}", max_new_tokens=10)) == f"Echo: t{i} c{j}"

    errors_seen = run_threads(worker, 8, timeout=60)
    assert not errors_seen
    assert double.ctl.ovd_concurrent_violations() == 0


def test_close_racing_a_running_generate_waits_then_frees_on_owner(double, model_dir):
    double.ctl.ovd_set_token_delay_us(10000)
    pipe = ovgenai_c.LLMPipeline(model_dir, library=double.library)
    owner = pipe.owner_thread_id
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", pipe.generate("a b c d e f g h", max_new_tokens=50)))
    t.start()
    time.sleep(0.03)
    pipe.close()
    t.join(5)
    assert str(out["r"]) == "Echo: a b c d e f g h"
    assert double.live() == 0
    assert [tid for op, _, tid in double.thread_log() if op == "free"] == [owner]


def test_generate_with_history(make_pipe, double):
    pipe = make_pipe()
    hist = ovgenai_c.ChatHistory([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there"}])
    hist.set_tools([{"type": "function", "function": {"name": "f"}}])
    hist.set_extra_context({"enable_thinking": False})
    assert str(pipe.generate(hist, max_new_tokens=10)) == "Echo: hi there"
    assert str(pipe.generate([{"role": "user", "content": "list form"}], max_new_tokens=10)) == "Echo: list form"
    assert double.live("chat_history") == 0 and double.live("json_container") == 0


def test_generation_config_roundtrip_through_pipeline(make_pipe, double):
    pipe = make_pipe()
    cfg = pipe.get_generation_config()
    cfg.max_new_tokens = 2
    pipe.set_generation_config(cfg)
    assert pipe.get_generation_config().max_new_tokens == 2
    assert str(pipe.generate("a b c d")) == "Echo: a "


def test_stop_strings_and_results_for_several_sequences(make_pipe, double):
    pipe = make_pipe()
    res = pipe.generate("alpha beta gamma", max_new_tokens=50, stop_strings={"gamma"})
    assert str(res) == "Echo: alpha beta "
    res = pipe.generate("x", max_new_tokens=5, do_sample=True, num_return_sequences=3)
    assert len(res.texts) == 3 and all(t == "Echo: x" for t in res.texts)
    assert all(isinstance(s, float) and not math.isnan(s) for s in res.scores)


def test_several_sequences_whose_texts_hold_numbered_lines(make_pipe, double):
    # the C ABI gives several sequences only as GenAI's string form ("%f: text" lines); generated lines that start
    # with a number and a colon (a numbered list, or "0.500000: ") are text, not the next sequence
    pipe = make_pipe()
    prompt = "list\n1: milk\n2: eggs\n0.500000: x"
    res = pipe.generate(prompt, max_new_tokens=50, do_sample=True, num_return_sequences=3)
    assert res.texts == ["Echo: " + prompt] * 3
    assert res.scores == [-1.0] * 3


def test_split_results_string_with_known_scores():
    # the bundled backend tells the scores: each text ends where the next score's line starts, even when a text
    # holds a line that looks like a score's
    from ovgenai_c.results import results_text, split_results_string

    texts = ["3: cheese\n-1.500000: soda\n", "3: cheese\n4: soda", ""]
    scores = [-0.58028698, -1.25, -7.0]
    string = "\n".join("%f: %s" % (s, t) for s, t in zip(scores, texts))  # GenAI's operator<< (std::to_string)
    assert split_results_string(string, 3, scores) == (texts, scores)
    assert results_text(["a"], [0.0]) == "a"


def test_buffer_text_keeps_a_nul_inside_and_drops_strncpy_padding():
    from ovgenai_c._capi.text import buffer_text
    from ovgenai_c._ffi import get_ffi

    ffi = get_ffi()

    whole = ffi.new("char[]", b"a\0b")  # the bundled backend copies the whole string (4 bytes with its NUL)
    assert buffer_text(ffi, whole, 4) == "a\0b"
    padded = ffi.new("char[]", b"a\0\0")  # the official library's strncpy stops at the NUL and pads
    assert buffer_text(ffi, padded, 4) == "a"
    assert buffer_text(ffi, ffi.new("char[]", b"caf\xc3\xa9"), 6) == "café" and buffer_text(ffi, whole, 0) == ""


def test_a_pipeline_cannot_be_copied_or_pickled(make_pipe, double):
    # a copy would share the native pipeline and its owner thread, and lose them with the original
    import copy
    import pickle

    pipe = make_pipe()
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="LLMPipeline cannot be"):
            attempt(pipe)
    assert str(pipe.generate("a b", max_new_tokens=2)) == "Echo: a "  # (the double echoes a word a token)


def test_empty_inputs_are_refused_by_name(make_pipe, double):
    pipe = make_pipe()
    for empty in ([], ovgenai_c.ChatHistory()):
        with pytest.raises(ovgenai_c.errors.InvalidParameterError, match="empty input"):
            pipe.generate(empty, max_new_tokens=2)
    assert str(pipe.generate("", max_new_tokens=2)) == "Echo: "  # an empty prompt is a prompt


def test_reentrant_call_from_streamer_is_refused(make_pipe, double):
    pipe = make_pipe()

    def streamer(t):
        pipe.generate("inner", max_new_tokens=2)

    with pytest.raises(RuntimeError, match="re-entrant"):
        pipe.generate("outer words", max_new_tokens=5, streamer=streamer)


def test_openvino_genai_style_code_runs_unchanged(double, model_dir):
    import ovgenai_c as ov_genai

    pipe = ov_genai.LLMPipeline(str(model_dir), "CPU", library=double.library)
    config = ov_genai.GenerationConfig()
    config.max_new_tokens = 100
    pieces = []

    def streamer(subword):
        pieces.append(subword)
        return ov_genai.StreamingStatus.RUNNING

    pipe.start_chat()
    result = pipe.generate("How are you", config, streamer)
    pipe.finish_chat()
    assert "".join(pieces) == str(result) == "Echo: How are you"
    perf = result.perf_metrics
    assert perf.get_ttft().mean > 0 and perf.get_throughput().mean > 0
    del pipe


def test_results_are_a_str_like_pybinds_str_result(make_pipe, double):
    pipe = make_pipe()
    r = pipe.generate("hello", max_new_tokens=10)
    assert isinstance(r, str) and r == "Echo: hello" and r.upper() == "ECHO: HELLO"
    assert r.perf_metrics.get_num_generated_tokens() == 2


def test_a_list_of_prompts_runs_one_after_the_other(make_pipe, double):
    pipe = make_pipe()
    r = pipe.generate(["a b", "c"], max_new_tokens=10)
    assert r.texts == ["Echo: a b", "Echo: c"]
    assert r.perf_metrics.get_num_generated_tokens() == 5
    with pytest.raises(ovgenai_c.NotSupportedError, match="one prompt"):
        pipe.generate(["a", "b"], max_new_tokens=3, streamer=print)
    with pytest.raises(ovgenai_c.NotSupportedError):
        pipe.stream(["a", "b"], max_new_tokens=3)


def test_empty_history_is_refused_before_c(make_pipe, double):
    pipe = make_pipe()
    with pytest.raises(errors.InvalidParameterError, match="empty"):
        pipe.generate(ovgenai_c.ChatHistory(), max_new_tokens=3)
    with pytest.raises(errors.InvalidParameterError, match="empty"):
        pipe.generate([], max_new_tokens=3)


@pytest.mark.parametrize("entry", ["generate", "stream", "astream"])
@pytest.mark.parametrize("bad", [True, -1, 0, "x", float("nan")])
def test_bad_timeout_is_refused_before_anything_runs(make_pipe, double, entry, bad):
    import asyncio

    from ovgenai_c import errors

    pipe = make_pipe()
    generates = lambda: sum(op == "generate" for op, _, _ in double.thread_log())  # noqa: E731
    before = generates()
    with pytest.raises(errors.InvalidParameterError, match="timeout must be a positive number"):
        if entry == "generate":
            pipe.generate("hi", max_new_tokens=2, timeout=bad)
        elif entry == "stream":
            pipe.stream("hi", max_new_tokens=2, timeout=bad)
        else:
            async def consume():
                async for _ in pipe.astream("hi", max_new_tokens=2, timeout=bad):
                    pass
            asyncio.run(consume())
    assert generates() == before  # refused before anything reached C
    assert pipe.generate("hi", max_new_tokens=2)  # the pipeline is still usable


def test_prompt_lookup_is_refused_by_name_on_a_library_that_does_not_take_it(make_pipe):
    # only the bundled backend and the official library take the `prompt_lookup` property; the double is neither
    with pytest.raises(ovgenai_c.NotSupportedError, match="prompt_lookup.*other library"):
        make_pipe(prompt_lookup=True)
    make_pipe(prompt_lookup=False).close()  # false is GenAI's default: dropped, never sent


def test_a_draft_model_is_refused_by_name_on_a_library_that_cannot_take_it(make_pipe):
    # the C API cannot pass a draft model; only the bundled backend takes one (its own create property)
    with pytest.raises(ovgenai_c.NotSupportedError, match="draft_model: .*GenAI C API cannot pass.*bundled backend"):
        make_pipe(draft_model=ovgenai_c.draft_model(TINY_IR))


def test_prompt_lookup_fields_are_refused_on_a_pipeline_made_without_it(make_pipe):
    with pytest.raises(ovgenai_c.NotSupportedError, match="prompt_lookup=True"):
        make_pipe().generate("Hi", max_new_tokens=2, num_assistant_tokens=3, max_ngram_size=2)


@pytest.mark.parametrize("key", ["OVGENAI_C_STATIC_DECODE", "OVGENAI_C_MAX_NUM_SEQS"])
def test_bundled_backend_properties_are_refused_by_name_on_another_library(make_pipe, double, key):
    # another library would hand them to OpenVINO, whose create fails without saying why
    with pytest.raises(errors.NotSupportedError, match=f"{key}: a property of ovgenai_c's bundled backend.*the other "
                                                       "library does not take it"):
        make_pipe(**{key: "NO"})
