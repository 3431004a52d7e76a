"""What the cheap per-call path keeps between calls, on the ABI double: the native form of a repeated per-call
config (one per pipeline, freed with it on its owner thread), results of which only the text is read with the
call (the native results live until their perf metrics, scores or finish reason are first used, and never past
the pipeline's close), and checked configs remembered per set of keyword arguments (forgotten when the
pipeline's config changes)."""
from __future__ import annotations

import copy
import dataclasses
import gc
import math
import pickle
from typing import Any, Dict

import pytest

import ovgenai_c
from ovgenai_c import errors
from testsupport import settle_garbage


class CountingLib:
    """A cffi library that counts calls of the functions named, passing everything through."""

    def __init__(self, lib: Any, names: tuple) -> None:
        self._lib = lib
        self._names = names
        self.calls: Dict[str, int] = {n: 0 for n in names}

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._lib, name)
        if name in self._names:
            inner = fn

            def fn(*a: Any) -> Any:
                self.calls[name] += 1
                return inner(*a)
        return fn


@pytest.fixture
def counted(double, model_dir):
    lib = CountingLib(double.library.lib, ("ov_genai_generation_config_create", "ov_genai_perf_metrics_get_ttft"))
    loaded = dataclasses.replace(double.library, lib=lib)
    pipe = ovgenai_c.LLMPipeline(model_dir, library=loaded)
    yield pipe, lib
    pipe.close()


def test_a_repeated_per_call_config_is_materialised_once_and_freed_with_the_pipeline(counted, double):
    pipe, lib = counted
    base = pipe.get_generation_config()
    base.max_new_tokens = 50
    pipe.set_generation_config(base)  # (its native form is freed at once: the pipeline keeps a copy)
    assert double.live("config") == 0
    made = lib.calls["ov_genai_generation_config_create"]
    for _ in range(5):
        assert str(pipe.generate("a b c d e", max_new_tokens=2)) == "Echo: a "
    assert lib.calls["ov_genai_generation_config_create"] == made + 1
    assert double.live("config") == 1  # the pipeline's cached one
    # other values: a new native config replaces the cached one (still one live), and takes effect
    assert str(pipe.generate("a b c d e", max_new_tokens=3)) == "Echo: a b "
    assert lib.calls["ov_genai_generation_config_create"] == made + 2
    assert double.live("config") == 1
    # the same values from a GenerationConfig argument reuse it
    cfg = pipe.get_generation_config()
    cfg.max_new_tokens = 3
    assert str(pipe.generate("a b c d e", cfg)) == "Echo: a b "
    assert lib.calls["ov_genai_generation_config_create"] == made + 2
    # the pipeline's own config sends none (NULL): the cached one stays until the pipeline goes
    assert str(pipe.generate("a b c d e")) == "Echo: a b c d e"
    assert double.live("config") == 1
    owner = pipe.owner_thread_id
    pipe.close()
    assert double.live() == 0
    assert [tid for op, _, tid in double.thread_log() if op == "free"] == [owner]


def test_an_unhashable_per_call_value_materialises_for_that_call_only(make_pipe, double):
    pipe = make_pipe()
    pipe.generate("a b c", max_new_tokens=2, stop_strings={"zz"})
    assert double.live("config") == 1
    pipe.generate("a b c", max_new_tokens=2, stop_token_ids=[7])  # a list: no fingerprint of the kwargs
    assert double.live("config") == 1  # the cached one; the list one was freed after its call
    pipe.close()
    assert double.live() == 0


def test_only_the_text_is_read_with_the_results_the_rest_on_first_use(counted, double):
    pipe, lib = counted
    gc.collect()
    res = pipe.generate("hello world", max_new_tokens=50)
    assert str(res) == "Echo: hello world" and res.texts == ["Echo: hello world"]
    # the decoded results are kept, nothing else read from them yet
    assert lib.calls["ov_genai_perf_metrics_get_ttft"] == 0
    assert double.live("results") == 1 and double.live("perf_metrics") == 0
    assert res.finish_reason == "stop"  # the first deferred field read reads them all, then frees them
    assert lib.calls["ov_genai_perf_metrics_get_ttft"] == 1
    assert double.live("results") == 0 and double.live("perf_metrics") == 0
    pm = res.perf_metrics
    assert type(pm) is ovgenai_c.PerfMetrics
    assert pm.get_num_generated_tokens() == 3 and pm.get_ttft().mean == pytest.approx(20.0)
    assert pm.get_num_input_tokens() == 2 and pm.get_load_time() == pytest.approx(12.5)
    assert res.scores == [res.scores[0]] and res.finish_reasons == [ovgenai_c.GenerationFinishReason.STOP]
    assert lib.calls["ov_genai_perf_metrics_get_ttft"] == 1  # read once


@pytest.mark.parametrize("field", ["perf_metrics", "scores", "finish_reason", "finish_reasons"])
def test_any_deferred_field_reads_the_same_values(make_pipe, double, field):
    pipe = make_pipe()
    eager = pipe.generate("a b c d e", max_new_tokens=2)
    eager.perf_metrics.get_ttft()  # everything read
    lazy = pipe.generate("a b c d e", max_new_tokens=2)
    assert double.live("results") == 1
    getattr(lazy, field)
    assert double.live("results") == 0
    assert lazy == eager and lazy.finish_reason == eager.finish_reason == "length"
    assert lazy.perf_metrics == eager.perf_metrics and lazy.finish_reasons == eager.finish_reasons
    assert [math.isnan(x) for x in lazy.scores] == [math.isnan(x) for x in eager.scores]
    with pytest.raises(AttributeError):
        lazy.no_such_field  # noqa: B018
    # a conversation gives DecodedResults (not a str): deferred alike
    hist = pipe.generate([{"role": "user", "content": "x y"}], max_new_tokens=50)
    assert type(hist) is ovgenai_c.DecodedResults and double.live("results") == 1
    assert hist.finish_reason == "stop" and double.live("results") == 0
    pipe.finish_chat()


def test_deferred_results_copy_pickle_and_compare_as_plain_ones(make_pipe, double):
    pipe = make_pipe()
    a = pipe.generate("hello world", max_new_tokens=50)
    back = pickle.loads(pickle.dumps(a))  # reads the deferred fields first
    assert double.live("results") == 0
    assert back == a and back.finish_reason == a.finish_reason and back.perf_metrics == a.perf_metrics
    b = pipe.generate("hello world", max_new_tokens=50)
    c = copy.copy(b)
    assert c == b and c.perf_metrics == b.perf_metrics
    hist = pipe.generate([{"role": "user", "content": "x y"}], max_new_tokens=50)
    assert pickle.loads(pickle.dumps(hist)) == hist
    pipe.finish_chat()


def test_the_text_is_read_in_one_call_into_a_buffer_that_grows_to_fit(double, model_dir):
    lib = CountingLib(double.library.lib, ("ov_genai_decoded_results_get_string",))
    pipe = ovgenai_c.LLMPipeline(model_dir, library=dataclasses.replace(double.library, lib=lib))
    try:
        assert str(pipe.generate("a b", max_new_tokens=50)) == "Echo: a b"
        assert lib.calls["ov_genai_decoded_results_get_string"] == 1
        long = " ".join(f"word{i}" for i in range(2000))  # ~16 kB: over the first buffer
        assert str(pipe.generate(long, max_new_tokens=5000)) == f"Echo: {long}"
        assert lib.calls["ov_genai_decoded_results_get_string"] == 4  # too small, the size, the copy
        assert str(pipe.generate(long, max_new_tokens=5000)) == f"Echo: {long}"
        assert lib.calls["ov_genai_decoded_results_get_string"] == 5  # the grown buffer fits
        assert str(pipe.generate("a b", max_new_tokens=50)) == "Echo: a b"
    finally:
        pipe.close()
    assert double.live() == 0


def test_a_failing_deferred_read_raises_at_first_use_and_every_use_after(make_pipe, double):
    pipe = make_pipe()
    res = pipe.generate("hello world", max_new_tokens=50)
    double.fail("ov_genai_decoded_results_get_perf_metrics", -17, 0)
    try:
        for _ in range(2):
            with pytest.raises(errors.GenAIError, match="ov_genai_decoded_results_get_perf_metrics"):
                res.perf_metrics  # noqa: B018
            with pytest.raises(errors.GenAIError):
                res.finish_reason  # noqa: B018
    finally:
        double.reset()
    assert double.live("results") == 0  # freed after the failed read all the same
    assert str(res) == "Echo: hello world"
    assert pipe.generate("again", max_new_tokens=50).finish_reason == "stop"


def test_unread_results_are_freed_when_dropped(make_pipe, double):
    pipe = make_pipe()
    gc.collect()
    for i in range(20):
        pipe.generate(f"x {i}", max_new_tokens=5)
    settle_garbage()  # (dropped: freed at once on CPython, at a collection on PyPy)
    assert double.live("perf_metrics") == 0 and double.live("results") == 0


def test_closing_the_pipeline_reads_what_its_live_results_have_not(make_pipe, double):
    pipe = make_pipe()
    gc.collect()
    kept = [pipe.generate("hello world", max_new_tokens=50) for _ in range(3)]
    assert double.live("results") == 3
    pipe.close()
    assert double.live() == 0
    for res in kept:
        assert res.perf_metrics.get_ttft().mean == pytest.approx(20.0)
        assert res.perf_metrics.get_num_input_tokens() == 2
        assert res.finish_reason == "stop"


def test_deferred_perf_metrics_compare_copy_and_pickle_as_plain_ones(make_pipe, double):
    pipe = make_pipe()
    a = pipe.generate("hello world", max_new_tokens=50).perf_metrics
    b = pipe.generate("hello world", max_new_tokens=50).perf_metrics
    c = pipe.generate("hello world", max_new_tokens=50).perf_metrics
    d = pipe.generate("hello world", max_new_tokens=50).perf_metrics
    loaded = pipe.generate("hello world", max_new_tokens=50).perf_metrics
    loaded.get_ttft()
    assert a == loaded and loaded == b  # unread on either side
    assert type(copy.copy(c)) is ovgenai_c.PerfMetrics and copy.copy(c) == loaded
    back = pickle.loads(pickle.dumps(d))
    assert back == loaded and back.get_num_input_tokens() == 2
    total = pipe.generate("hello world", max_new_tokens=50).perf_metrics
    total += pipe.generate("hello world", max_new_tokens=50).perf_metrics
    assert total.get_num_generated_tokens() == 6 and total.get_ttft().mean == pytest.approx(20.0)


def test_remembered_configs_follow_the_pipeline_config_and_refuse_bad_values_every_time(make_pipe):
    pipe = make_pipe()
    assert str(pipe.generate("a b c d e", max_new_tokens=2)) == "Echo: a "
    cfg = pipe.get_generation_config()
    cfg.max_new_tokens = 3
    pipe.set_generation_config(cfg)
    assert str(pipe.generate("a b c d e")) == "Echo: a b "  # the new pipeline config, not a remembered one
    assert str(pipe.generate("a b c d e", max_new_tokens=2)) == "Echo: a "
    for _ in range(2):  # a refused value is never remembered as checked
        with pytest.raises(errors.GenAIError):
            pipe.generate("a b c", temperature=-1.0, do_sample=True)
    for _ in range(2):  # nor is a value whose type the field refuses, though it equals an accepted one
        with pytest.raises(errors.GenAIError):
            pipe.generate("a b c", max_new_tokens=2.0)
    assert str(pipe.generate("a b c d e", max_new_tokens=2)) == "Echo: a "


# --- astream's hand-off ----------------------------------------------------------------------------------------
def test_async_chunk_queue_wakes_the_loop_once_per_batch_and_keeps_order():
    import asyncio
    import threading

    from ovgenai_c._streaming import END, AsyncChunkQueue

    loop = asyncio.new_event_loop()
    wakes = []
    original = loop.call_soon_threadsafe

    def counting(cb, *a):
        wakes.append(cb)
        return original(cb, *a)

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    q = AsyncChunkQueue(loop)
    producer = threading.Thread(target=lambda: [q.put(f"p{i}") for i in range(100)] + [q.put(END)])
    producer.start()
    producer.join()  # everything is queued before the loop runs: one wake-up was scheduled for all of it

    async def drain():
        got = []
        while (item := await q.get()) is not END:
            got.append(item)
        return got

    try:
        assert loop.run_until_complete(drain()) == [f"p{i}" for i in range(100)]
        assert len(wakes) == 1
    finally:
        loop.close()


def test_async_chunk_queue_deadline_and_a_put_while_waiting():
    import asyncio
    import threading

    from ovgenai_c._streaming import DEADLINE, AsyncChunkQueue

    async def main():
        loop = asyncio.get_running_loop()
        q = AsyncChunkQueue(loop)
        assert await q.get(loop.time() + 0.05) is DEADLINE
        threading.Timer(0.05, q.put, args=("late",)).start()
        assert await q.get() == "late"  # a put from another thread wakes a waiting get
        assert all(t.done() for t in asyncio.all_tasks() if t is not asyncio.current_task())

    asyncio.run(main())


def test_astream_delivers_every_piece_in_order_through_batches(make_pipe, double):
    import asyncio

    words = " ".join(f"w{i}" for i in range(300))
    pipe = make_pipe()

    async def consume():
        return [t async for t in pipe.astream(words, max_new_tokens=400)]

    pieces = asyncio.run(consume())
    assert "".join(pieces) == f"Echo: {words}"
    assert str(pipe.generate(words, max_new_tokens=400)) == "".join(pieces)


# --- the callback of a call whose text nobody reads ----------------------------------------------------------
def test_without_streamer_or_timeout_the_callback_only_checks_the_cancel_token(make_pipe, double, monkeypatch):
    from ovgenai_c import _streaming

    seen = {"text": 0, "cancel": 0}
    on_chunk, on_cancel = _streaming.StreamBridge.on_chunk, _streaming.StreamBridge.on_cancel_check

    def chunk(self, data):
        seen["text"] += 1
        return on_chunk(self, data)

    def cancel(self):
        seen["cancel"] += 1
        return on_cancel(self)

    monkeypatch.setattr(_streaming.StreamBridge, "on_chunk", chunk)
    monkeypatch.setattr(_streaming.StreamBridge, "on_cancel_check", cancel)
    pipe = make_pipe()
    before = double.ctl.ovd_callback_count()
    assert str(pipe.generate("a b c d", max_new_tokens=50)) == "Echo: a b c d"
    assert seen == {"text": 0, "cancel": double.ctl.ovd_callback_count() - before} and seen["cancel"] > 0
    # a streamer, or a timeout (its error carries the partial text), reads the text
    got = []
    assert str(pipe.generate("a b c d", max_new_tokens=50, streamer=got.append)) == "Echo: a b c d"
    assert seen["text"] > 0 and "".join(got) == "Echo: a b c d"
    text_before = seen["text"]
    assert str(pipe.generate("a b c d", max_new_tokens=50, timeout=30)) == "Echo: a b c d"
    assert seen["text"] > text_before


def test_a_timeout_still_cancels_natively_with_the_partial_text(make_pipe, double):
    double.ctl.ovd_set_token_delay_us(20000)
    pipe = make_pipe()
    with pytest.raises(errors.GenerationTimeoutError) as info:
        pipe.generate(" ".join(["w"] * 500), max_new_tokens=1000, timeout=0.2)
    assert double.ctl.ovd_last_callback_status() == 2
    assert info.value.partial_text.startswith("Echo: w")
    double.ctl.ovd_set_token_delay_us(0)


# --- the owner's end of a job ----------------------------------------------------------------------------------
def test_a_job_runs_its_done_callbacks_before_waking_its_waiter():
    import threading

    from ovgenai_c._owner import OwnerThread

    owner = OwnerThread("test-owner")
    try:
        gate = threading.Event()
        job = owner.submit(lambda: gate.wait(5) and 42)
        seen = []
        job.add_done_callback(lambda j: seen.append((j.done(), j.event.is_set(), j.value)))
        assert not job.done()
        gate.set()
        assert job.wait() == 42
        assert seen == [(True, False, 42)]  # published as done first, the waiter woken last
        late = []
        job.add_done_callback(lambda j: late.append(j.value))  # after the end: at once, on this thread
        assert late == [42]
        job.event.set()  # a second set changes nothing
        assert job.event.wait(0) and job.wait() == 42
        failing = owner.submit(lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            failing.wait()
    finally:
        owner.stop()
        assert owner.join(5)


def test_a_warm_generate_makes_its_cdata_from_resolved_types_not_type_strings(make_pipe, monkeypatch):
    """Every cdata a warm generate makes comes from a type resolved once per FFI (``ffi.call_types``): a type
    string is looked up on each use, after the FFI's serialised-types check (together ~1 µs of a ~11 µs warm
    generate on PyPy)."""
    pipe = make_pipe()
    ffi = pipe._state.capi.ffi
    strings: Dict[str, int] = {}
    for method in ("new", "cast", "typeof", "sizeof", "callback"):
        def counting(*a: Any, _inner: Any = getattr(ffi, method), **k: Any) -> Any:
            if a and isinstance(a[0], str):
                strings[a[0]] = strings.get(a[0], 0) + 1
            return _inner(*a, **k)
        monkeypatch.setattr(ffi, method, counting)
    config = ovgenai_c.GenerationConfig(max_new_tokens=2)
    calls = (lambda: pipe.generate("a b c", max_new_tokens=2), lambda: pipe.generate("a b c", config),
             lambda: pipe.generate("x y z", config))
    for call in calls * 3:  # warm: the pipeline's buffers, cached configs and relay functions are made
        call()
    # ...except the relayed calls' text buffer, made by the first call that takes the relay: on a loaded machine that
    # may be one of the measured calls (CI, 2026-12-07), so it must come from resolved types too
    pipe._state.relay_text = None
    strings.clear()
    for call in calls * 10:
        assert str(call()).startswith("Echo: ")
    assert strings == {}, f"type strings looked up by 30 warm generate calls: {strings}"
    pipe.close()
