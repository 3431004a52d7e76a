"""The bundled backend with the tiny fixture: cancellation at seeded random points, threads sharing a pipeline,
close racing a running generate. Native objects are counted by ovgenai_c_bundled_live_handles."""
from __future__ import annotations

import asyncio
import gc
import random
import threading
import time
import _thread

import pytest

import ovgenai_c
from ovgenai_c import StreamingStatus, errors

from relsupport import STATS, TINY_IR, run_threads
from testsupport import PRECISION_HINT, kept_native_objects, settle_garbage, transient_native_objects

_KINDS = ("config", "results", "perf_metrics", "chat_history", "json_container")

pytestmark = pytest.mark.usefixtures("python_sigint_handler")  # Ctrl-C cases (KeyboardInterrupt)

LONG = dict(max_new_tokens=5000, ignore_eos=True)  # seconds of work on the tiny model unless cancelled
BOUND = 3.0


@pytest.fixture(scope="module")
def bpipe(bundled_lib):
    p = ovgenai_c.LLMPipeline(TINY_IR, library=bundled_lib, **PRECISION_HINT)  # repeatable on bf16 CPUs too
    yield p
    p.close()


def _after(bundled_lib, pipe, t0, what):
    took = time.monotonic() - t0
    if took > BOUND:
        with STATS.lock:
            STATS.hangs += 1
        pytest.fail(f"{what} took {took:.2f} s")
    res = pipe.generate("ok", max_new_tokens=2)
    assert res.perf_metrics.get_num_generated_tokens() <= 2
    gc.collect()
    settle_garbage()  # (PyPy: a timed-out call's traceback frames, and what they hold, go at later collections)
    # nothing native is left but the pipelines and what they keep between calls (testsupport.kept_native_objects)
    left = transient_native_objects(bundled_lib, _KINDS)
    assert not any(left.values()), left
    assert bundled_lib.live_handles() == bundled_lib.live_handles("pipeline") + sum(
        kept_native_objects(bundled_lib.path).values())


@pytest.mark.parametrize("seed", range(24))
def test_bundled_cancel_at_random_point(seed, bpipe, bundled_lib):
    _cancel_at_random_point(seed, bpipe, bundled_lib)


@pytest.fixture(scope="module")
def spec_pipe(bundled_lib):
    """Speculative decoding: the tiny model drafting for itself (every draft accepted: several-token steps)."""
    draft = ovgenai_c.draft_model(TINY_IR, **PRECISION_HINT)
    p = ovgenai_c.LLMPipeline(TINY_IR, library=bundled_lib, draft_model=draft, **PRECISION_HINT)
    yield p
    p.close()


@pytest.mark.parametrize("seed", range(8))
def test_bundled_speculative_cancel_at_random_point(seed, spec_pipe, bundled_lib):
    # the same cancellations while a draft model proposes and the main model verifies several tokens a step
    _cancel_at_random_point(seed, spec_pipe, bundled_lib)


def _cancel_at_random_point(seed, bpipe, bundled_lib):
    STATS.case("cancellation")
    rng = random.Random(10000 + seed)
    mode = ["close", "timeout", "stop", "cancel", "raise", "astream", "kbi", "drop"][seed % 8]
    k = rng.randint(1, 30)
    t0 = time.monotonic()
    if mode == "close":
        it = bpipe.stream("tell me", **LONG)
        for _ in range(k):
            next(it)
        t0 = time.monotonic()
        it.close()
    elif mode == "drop":
        it = bpipe.stream("tell me", **LONG)
        for _ in range(k):
            next(it)
        t0 = time.monotonic()
        del it
        gc.collect()
    elif mode == "timeout":
        with pytest.raises(errors.GenerationTimeoutError):
            bpipe.generate("tell me", timeout=rng.uniform(0.01, 0.3), **LONG)
    elif mode in ("stop", "cancel"):
        n = [0]
        status = StreamingStatus.STOP if mode == "stop" else StreamingStatus.CANCEL

        def streamer(t):
            n[0] += 1
            return status if n[0] >= k else None

        res = bpipe.generate("tell me", streamer=streamer, **LONG)
        assert res.finish_reason == mode
        assert res.perf_metrics.get_num_generated_tokens() < 200
    elif mode == "raise":
        n = [0]

        def streamer(t):
            n[0] += 1
            if n[0] >= k:
                raise LookupError("enough")

        with pytest.raises(LookupError, match="enough"):
            bpipe.generate("tell me", streamer=streamer, **LONG)
    elif mode == "astream":
        async def main():
            async def consume():
                async for _ in bpipe.astream("tell me", **LONG):
                    pass
            task = asyncio.ensure_future(consume())
            await asyncio.sleep(rng.uniform(0.0, 0.2))
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        asyncio.run(main())
    elif mode == "kbi":
        timer = threading.Timer(rng.uniform(0.0, 0.2), _thread.interrupt_main)
        try:
            timer.start()
            try:
                bpipe.generate("tell me", **LONG)
            finally:
                timer.cancel()
                timer.join()
            time.sleep(0.02)
            pytest.fail("a 5000-token generation finished before the interrupt")  # pragma: no cover
        except KeyboardInterrupt:
            STATS.event("KeyboardInterrupt delivered (bundled)")
    _after(bundled_lib, bpipe, t0, mode)


def test_bundled_threads_share_one_pipeline_deterministically(bpipe, bundled_lib):
    prompts = [f"prompt number {i}" for i in range(4)]
    expected = {p: str(bpipe.generate(p, max_new_tokens=8)) for p in prompts}

    def worker(i):
        for j in range(10):
            p = prompts[(i + j) % 4]
            if j % 2:
                with bpipe.stream(p, max_new_tokens=8) as it:
                    text = "".join(it)
            else:
                text = str(bpipe.generate(p, max_new_tokens=8))
            assert text == expected[p], (p, text, expected[p])
            STATS.case("concurrency")

    failures = run_threads(worker, 4, timeout=120)
    assert not failures, failures[:3]


def test_bundled_close_racing_a_running_generate(bundled_lib):
    gc.collect()
    settle_garbage()  # (PyPy: earlier tests' garbage goes now, not into the baseline)
    base = bundled_lib.live_handles()  # e.g. the module's shared pipeline, other suites' session pipelines
    for seed in range(3):
        STATS.case("concurrency")
        p = ovgenai_c.LLMPipeline(TINY_IR, library=bundled_lib)
        out = {}

        def run():
            try:
                out["res"] = p.generate("tell me", max_new_tokens=400, ignore_eos=True)
            except errors.PipelineClosedError as exc:
                out["closed"] = exc

        t = threading.Thread(target=run)
        t.start()
        time.sleep(random.Random(seed).uniform(0.0, 0.1))
        t0 = time.monotonic()
        p.close()
        t.join(30)
        assert not t.is_alive()
        assert time.monotonic() - t0 < 30
        assert ("res" in out) != ("closed" in out)
        if "res" in out:
            assert out["res"].perf_metrics.get_num_generated_tokens() == 400
    deadline = time.monotonic() + 5
    while bundled_lib.live_handles() > base and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.02)
    assert bundled_lib.live_handles() == base
