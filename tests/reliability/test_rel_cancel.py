"""Cancellation at seeded random points: iterator close / drop, asyncio cancel and timeout, generate timeout,
STOP / CANCEL / exceptions from a streamer, KeyboardInterrupt. Every case is bounded in time, leaks no native
object, leaves the pipeline usable, and chat history follows upstream's rules (STOP keeps the turn, CANCEL
drops it)."""
from __future__ import annotations

import asyncio
import gc
import random
import sys
import threading
import time
import _thread
import weakref

import pytest

import ovgenai_c
from ovgenai_c import errors
from ovgenai_c import StreamingStatus

from relsupport import STATS
from testsupport import transient_native_objects

pytestmark = pytest.mark.usefixtures("python_sigint_handler")  # Ctrl-C cases (KeyboardInterrupt)

WORDS = 40            # tokens of each reply (the double streams one word per token)
DELAY_US = 2000       # per token: a generation takes ~80 ms, long enough to be hit in flight
BOUND = 3.0           # seconds any single cancellation may take
PER_MODE = 16         # 8 modes x 16 = 128 random points
PROMPT = " ".join(f"w{i}" for i in range(WORDS - 1))  # "Echo: " + 39 words = 40 tokens
LONG_REPLY = " ".join(f"r{i}" for i in range(400))  # 400 tokens


def _bounded(t0: float, what: str) -> None:
    took = time.monotonic() - t0
    if took > BOUND:
        with STATS.lock:
            STATS.hangs += 1
        pytest.fail(f"{what} took {took:.2f} s (bound {BOUND} s)")


def _settle(dbl, pipe) -> None:
    """The next generate works (it queues behind anything still running) and nothing transient is left (what
    the open pipelines keep between calls, testsupport.kept_native_objects, is not transient)."""
    dbl.delay(0)
    assert str(pipe.generate("next one", max_new_tokens=5)) == "Echo: next one"
    left = transient_native_objects(dbl, ("results", "config", "perf_metrics", "chat_history", "json_container"))
    assert not any(left.values()), left


@pytest.fixture
def cpipe(shared_pipe, dbl):
    dbl.delay(DELAY_US)
    yield shared_pipe
    dbl.delay(0)


def _seeds(mode: str):
    return [pytest.param(i, id=f"{mode}-{i}") for i in range(PER_MODE)]


@pytest.mark.parametrize("seed", _seeds("close"))
def test_iterator_close_at_random_point(seed, cpipe, dbl):
    STATS.case("cancellation")
    rng = random.Random(1000 + seed)
    k = rng.randint(0, WORDS + 2)
    dbl.delay(10000)  # slower than DELAY_US: a loaded machine must not finish the reply before close() comes
    cpipe.start_chat()
    try:
        base = dbl.chat_size(cpipe)
        it = cpipe.stream(PROMPT, max_new_tokens=1000)
        got = []
        for piece in it:
            got.append(piece)
            if len(got) >= k:
                break
        t0 = time.monotonic()
        it.close()
        _bounded(t0, "stream close")
        assert it.text.startswith("".join(got))
        cancelled = dbl.ctl.ovd_last_callback_status() == 2
        # CANCEL drops the turn; a generation that ended before the close keeps it
        assert dbl.chat_size(cpipe) == base + (0 if cancelled else 2)
        if 0 < k < WORDS - 3:
            assert cancelled, f"closed after {k} of {WORDS} pieces but C was not told to cancel"
    finally:
        cpipe.finish_chat()
    _settle(dbl, cpipe)


@pytest.mark.parametrize("seed", _seeds("drop"))
def test_iterator_dropped_unclosed_at_random_point(seed, cpipe, dbl):
    STATS.case("cancellation")
    rng = random.Random(2000 + seed)
    k = rng.randint(0, 10)
    dbl.delay(10000)
    dbl.reply(LONG_REPLY)  # ~4 s unless cancelled: the drop comes long before the reply could end by itself
    cpipe.start_chat()
    try:
        base = dbl.chat_size(cpipe)
        it = cpipe.stream(PROMPT, max_new_tokens=1000)
        for _ in range(k):
            next(it)
        t0 = time.monotonic()
        del it
        gc.collect()
        dbl.ctl.ovd_set_reply(dbl.cffi.NULL)  # the settling turn echoes again (the dropped one copied its reply)
        _settle(dbl, cpipe)  # queued behind the dropped stream, which must have been cancelled
        _bounded(t0, "dropped stream")
        # the CANCEL reached C: the double drops a cancelled turn, so only the settling turn is in the history
        assert dbl.chat_size(cpipe) == base + 2, "the dropped stream's turn was kept: C was not told to cancel"
    finally:
        cpipe.finish_chat()


@pytest.mark.parametrize("seed", _seeds("astream-cancel"))
def test_asyncio_task_cancel_at_random_point(seed, cpipe, dbl):
    STATS.case("cancellation")
    rng = random.Random(3000 + seed)
    after = rng.uniform(0.0, 0.1)
    got = []

    async def consume():
        async for piece in cpipe.astream(PROMPT, max_new_tokens=1000):
            got.append(piece)

    async def main():
        task = asyncio.ensure_future(consume())
        await asyncio.sleep(after)
        task.cancel()
        t0 = time.monotonic()
        try:
            await task
            return "finished", t0
        except asyncio.CancelledError:
            return "cancelled", t0

    outcome, t0 = asyncio.run(main())
    _bounded(t0, "astream cancel")
    if outcome == "cancelled":
        assert len(got) < WORDS
    else:
        assert "".join(got) == "Echo: " + PROMPT
    _settle(dbl, cpipe)


@pytest.mark.parametrize("seed", _seeds("astream-timeout"))
def test_asyncio_wait_for_timeout_at_random_point(seed, cpipe, dbl):
    STATS.case("cancellation")
    rng = random.Random(4000 + seed)
    limit = rng.uniform(0.001, 0.12)
    got = []

    async def consume():
        async for piece in cpipe.astream(PROMPT, max_new_tokens=1000):
            got.append(piece)
        return "done"

    async def main():
        try:
            return await asyncio.wait_for(consume(), timeout=limit)
        except asyncio.TimeoutError:
            return "timeout"

    t0 = time.monotonic()
    outcome = asyncio.run(main())
    _bounded(t0, "astream wait_for")
    if outcome == "done":
        assert "".join(got) == "Echo: " + PROMPT
    _settle(dbl, cpipe)


_TIMEOUT_SEEDS = {"generate": 5000, "stream": 5500, "astream": 6000}


@pytest.mark.parametrize("entry", ["generate", "stream", "astream"])
@pytest.mark.parametrize("seed", _seeds("timeout"))
def test_timeout_at_random_point(entry, seed, cpipe, dbl):
    STATS.case("cancellation")
    rng = random.Random(_TIMEOUT_SEEDS[entry] + seed)
    limit = rng.uniform(0.001, 0.12)
    got = []
    t0 = time.monotonic()
    try:
        if entry == "generate":
            text = str(cpipe.generate(PROMPT, max_new_tokens=1000, timeout=limit, streamer=got.append))
        elif entry == "stream":
            with cpipe.stream(PROMPT, max_new_tokens=1000, timeout=limit) as it:
                for piece in it:
                    got.append(piece)
            text = "".join(got)
        else:
            async def consume():
                async for piece in cpipe.astream(PROMPT, max_new_tokens=1000, timeout=limit):
                    got.append(piece)

            asyncio.run(consume())
            text = "".join(got)
    except errors.GenerationTimeoutError as exc:
        assert isinstance(exc, TimeoutError)
        if entry == "generate":
            assert exc.partial_text == "".join(got)  # the streamer saw every piece
        else:
            assert exc.partial_text.startswith("".join(got))
        if exc.partial_text != "Echo: " + PROMPT:  # (the deadline may also pass just as the reply completes)
            assert dbl.ctl.ovd_last_callback_status() == 2
    else:
        assert text == "Echo: " + PROMPT
    _bounded(t0, f"{entry}(timeout={limit:.3f})")
    _settle(dbl, cpipe)


@pytest.mark.parametrize("seed", _seeds("streamer-status"))
def test_streamer_stop_or_cancel_at_random_chunk_follows_chat_rules(seed, cpipe, dbl):
    STATS.case("cancellation")
    rng = random.Random(6000 + seed)
    k = rng.randint(1, WORDS)
    status = rng.choice([StreamingStatus.STOP, StreamingStatus.CANCEL, True])
    calls = []

    def streamer(text):
        calls.append(text)
        return status if len(calls) == k else StreamingStatus.RUNNING

    cpipe.start_chat()
    try:
        cpipe.generate("first turn", max_new_tokens=50)
        base = dbl.chat_size(cpipe)
        assert base == 2
        t0 = time.monotonic()
        res = cpipe.generate(PROMPT, max_new_tokens=1000, streamer=streamer)
        _bounded(t0, "streamer stop/cancel")
        assert len(calls) == k
        assert str(res) == "".join(calls)
        if status == StreamingStatus.CANCEL:
            assert res.finish_reason == "cancel"
            assert dbl.chat_size(cpipe) == base, "CANCEL must drop the turn from the chat history"
        else:
            assert res.finish_reason == "stop"
            assert dbl.chat_size(cpipe) == base + 2, "STOP must keep the turn in the chat history"
    finally:
        cpipe.finish_chat()
    _settle(dbl, cpipe)


class _Boom(Exception):
    pass


@pytest.mark.parametrize("seed", _seeds("streamer-raises"))
def test_streamer_exception_at_random_chunk(seed, cpipe, dbl):
    STATS.case("cancellation")
    rng = random.Random(7000 + seed)
    k = rng.randint(1, WORDS)
    exc_type = rng.choice([_Boom, KeyboardInterrupt, SystemExit, GeneratorExit])
    calls = []

    def streamer(text):
        calls.append(text)
        if len(calls) == k:
            raise exc_type(f"raised at {k}")

    t0 = time.monotonic()
    with pytest.raises(exc_type, match=f"raised at {k}"):
        cpipe.generate(PROMPT, max_new_tokens=1000, streamer=streamer)
    _bounded(t0, "streamer exception")
    assert len(calls) == k
    assert dbl.ctl.ovd_last_callback_status() == 2
    _settle(dbl, cpipe)


@pytest.mark.parametrize("seed", _seeds("kbi"))
def test_keyboard_interrupt_at_random_point(seed, cpipe, dbl):
    STATS.case("cancellation")
    rng = random.Random(8000 + seed)
    after = rng.uniform(0.0, 0.1)
    use_stream = rng.random() < 0.5
    timer = threading.Timer(after, _thread.interrupt_main)
    interrupted = False
    t0 = time.monotonic()
    try:
        timer.start()
        try:
            if use_stream:
                with cpipe.stream(PROMPT, max_new_tokens=1000) as it:
                    text = "".join(it)
                assert text == "Echo: " + PROMPT
            else:
                res = cpipe.generate(PROMPT, max_new_tokens=1000)
                assert str(res) == "Echo: " + PROMPT
        finally:
            timer.cancel()
            timer.join()
        time.sleep(0.02)  # a pending interrupt is delivered here at the latest
    except KeyboardInterrupt:
        interrupted = True
    _bounded(t0, "KeyboardInterrupt")
    _settle(dbl, cpipe)
    if interrupted:
        STATS.event("KeyboardInterrupt delivered")


# regression: close() used to swallow a Ctrl-C pressed while it waited (fixed: re-raised after the free)
def test_ctrl_c_while_close_waits_is_not_lost(dbl, rel_model_dir):
    STATS.case("cancellation")
    dbl.delay(20000)
    before = dbl.live("pipeline")
    pipe = ovgenai_c.LLMPipeline(rel_model_dir, library=dbl.library)
    worker = threading.Thread(target=lambda: pipe.generate(" ".join(["w"] * 50), max_new_tokens=100))
    worker.start()
    time.sleep(0.05)
    timer = threading.Timer(0.05, _thread.interrupt_main)
    interrupted = False
    try:
        timer.start()
        try:
            pipe.close()
        finally:
            timer.join()
        time.sleep(0.05)  # an interrupt still pending would be delivered here (it is not: close swallowed it)
    except KeyboardInterrupt:
        interrupted = True
    worker.join(10)
    assert dbl.live("pipeline") == before
    assert interrupted, "Ctrl-C pressed during close() was swallowed"


def test_ctrl_c_during_the_collection_before_close_still_frees(dbl, rel_model_dir, monkeypatch):
    """On PyPy close() first collects (results dropped just before go with the pipeline); a Ctrl-C landing in that
    collection (seen in the PyPy part, where collections of a large heap take long) is raised once the pipeline is
    freed, not instead of freeing it. The collection's interrupt is stood in for here, so this runs everywhere."""
    from ovgenai_c import _native_memory

    STATS.case("cancellation")
    before = dbl.live("pipeline")
    pipe = ovgenai_c.LLMPipeline(rel_model_dir, library=dbl.library)
    assert str(pipe.generate("a b", max_new_tokens=5)) == "Echo: a b"

    def interrupted_collection() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_native_memory, "before_close", interrupted_collection)
    with pytest.raises(KeyboardInterrupt):
        pipe.close()
    assert pipe.closed and dbl.live("pipeline") == before
    pipe.close()  # (closed: nothing more, no second interrupt)


@pytest.mark.parametrize("seed", range(8))
def test_astream_break_out_of_async_for(seed, cpipe, dbl):
    """Leaving ``async for`` with break (no explicit aclose) must still cancel natively, soon."""
    STATS.case("cancellation")
    rng = random.Random(9000 + seed)
    k = rng.randint(1, 5)
    dbl.delay(50000)  # uncancelled, the reply would take ~1.8 s more

    async def main():
        n = 0
        async for _ in cpipe.astream(PROMPT, max_new_tokens=1000):
            n += 1
            if n >= k:
                break
        await asyncio.sleep(0.05)  # let the loop run the async generator's finalizer

    before = int(dbl.ctl.ovd_callback_count())
    asyncio.run(main())
    dbl.delay(0)
    assert str(cpipe.generate("after break", max_new_tokens=5)) == "Echo: after break"
    # the next call ran after the abandoned astream ended: that one was cancelled, not run to its 40 tokens
    streamed = int(dbl.ctl.ovd_callback_count()) - before
    assert streamed < WORDS, f"the abandoned astream was not cancelled ({streamed} callbacks)"
    _settle(dbl, cpipe)


class _InterruptingFinalizer:
    """Garbage whose finalizer presses Ctrl-C and runs on: the handler raises KeyboardInterrupt inside it, and
    Python ignores it there ("Exception ignored in ...": sys.unraisablehook) — as when a collection on the main
    thread runs some library's finalizer at the moment Ctrl-C comes (PyPy lost one so in the model-load test)."""

    def __del__(self) -> None:
        _thread.interrupt_main()
        for _ in range(10000):
            pass


@pytest.mark.parametrize("path", ["job", "relay"])
def test_ctrl_c_that_a_finalizer_swallowed_during_a_wait_is_raised(path, dbl, rel_model_dir, monkeypatch):
    """Both waits of the main thread: a pipeline's first call goes to its owner as a Python job, later ones
    through the relay (waited for in C)."""
    STATS.case("cancellation")
    dbl.delay(0)
    pipe = ovgenai_c.LLMPipeline(rel_model_dir, library=dbl.library)
    try:
        _interrupt_a_wait_through_a_finalizer(pipe, dbl, path, monkeypatch)
    finally:
        pipe.close()
    STATS.event("KeyboardInterrupt delivered")


def _interrupt_a_wait_through_a_finalizer(pipe, dbl, path, monkeypatch) -> None:
    from ovgenai_c import _owner

    if path == "relay":
        assert str(pipe.generate("warm", max_new_tokens=2)) == "Echo: warm"
        # the owner serves its relay once back from that first call: on a loaded machine the next call could
        # otherwise come first and go as a job (CI at 1247cb1)
        relay, deadline = pipe._state.owner.relay, time.monotonic() + 30
        while not relay.reserve():
            assert time.monotonic() < deadline, "the owner never served its relay"
            time.sleep(0.001)
        relay.unreserve()
    posted = []
    monkeypatch.setattr(_owner.RelayJob, "__init__", lambda self, *a, _init=_owner.RelayJob.__init__:
                        posted.append(True) or _init(self, *a))
    real_poll_slice = _owner._poll_slice
    fired = []
    unraisable = []

    def poll_slice_after_a_finalizer_ran(left):
        if not fired:  # the wait's first slice: a collection runs the finalizer here, on the main thread
            fired.append(True)
            _InterruptingFinalizer()
            gc.collect()
        return real_poll_slice(left)

    monkeypatch.setattr(_owner, "_poll_slice", poll_slice_after_a_finalizer_ran)
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)  # (what pytest would otherwise report)
    dbl.delay(50000)  # 40 tokens: 2 s uncancelled
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        pipe.generate(PROMPT, max_new_tokens=1000)
    took = time.monotonic() - t0
    assert fired, "the main thread never waited in a signal-aware loop"
    assert took < 1.0, f"raised only after {took:.2f} s: the call ran on instead of being cancelled"
    assert not any(isinstance(u.exc_value, KeyboardInterrupt) for u in unraisable)  # ours took it, not the hook below
    assert bool(posted) == (path == "relay")
    _settle(dbl, pipe)


# regression: Ctrl-C during a model load used to be swallowed (fixed: create finishes, is freed, re-raised)
def test_ctrl_c_during_model_load_is_not_lost(bundled_lib):
    from relsupport import TINY_IR

    STATS.case("cancellation")
    gc.collect()
    base = bundled_lib.live_handles()  # other suites' session pipelines share this library instance
    timer = threading.Timer(0.1, _thread.interrupt_main)
    interrupted = False
    pipe = None
    try:
        timer.start()
        try:
            pipe = ovgenai_c.LLMPipeline(TINY_IR, library=bundled_lib)
        finally:
            timer.join()
        time.sleep(0.05)
    except KeyboardInterrupt:
        interrupted = True
    if pipe is not None:
        pipe.close()
    deadline = time.monotonic() + 5
    while bundled_lib.live_handles() > base and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.02)
    assert bundled_lib.live_handles() == base
    assert interrupted, "Ctrl-C pressed during the model load was swallowed"


def _garbage_cycle_with_callback(refs: list, callback) -> None:
    """A reference cycle only a collection frees, watched by a weakref (kept alive in ``refs``) with ``callback``."""

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a
    refs.append(weakref.ref(a, callback))


def test_a_ctrl_c_during_a_collection_is_not_lost(monkeypatch):
    """A pipeline's creation on PyPy starts with a collection (_native_memory.before_create); a Ctrl-C that lands
    while it runs a weakref callback or finalizer is dropped by the interpreter as unraisable (seen in CI: "Exception
    ignored in: weakref callback ... KeyboardInterrupt", and the load went on). collect() raises it afterwards; other
    unraisable errors still go to the hook that was there, which is back in place after."""
    from ovgenai_c import _native_memory

    STATS.case("cancellation")
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(type(u.exc_value)))
    hook = sys.unraisablehook
    refs: list = []

    def interrupted(_ref):
        raise KeyboardInterrupt

    def failed(_ref):
        raise ValueError("not an interrupt")

    _garbage_cycle_with_callback(refs, interrupted)
    _garbage_cycle_with_callback(refs, failed)
    with pytest.raises(KeyboardInterrupt):
        _native_memory.collect()
    assert seen == [ValueError]  # the other error reached the hook; the interrupt did not vanish into it
    assert sys.unraisablehook is hook
    _native_memory.collect()  # nothing pending: nothing raised
