"""Concurrency on the double: many threads on one pipeline, close racing running generates, GC of pipelines
never closed, many pipelines created and dropped, concurrent closes."""
from __future__ import annotations

import asyncio
import gc
import random
import threading
import time

import pytest

import ovgenai_c
from ovgenai_c import errors

from relsupport import STATS, last_json, run_snippet, run_threads, start_threads


def test_8_threads_x_50_calls_on_one_pipeline(make_pipe, dbl):
    """generate / stream / generate-with-history / set+get config mixed from 8 threads, serialised on the owner."""
    pipe = make_pipe()
    owner = pipe.owner_thread_id
    failures = []

    def worker(i):
        rng = random.Random(i)
        for j in range(50):
            kind = rng.randrange(4)
            prompt = f"t{i} c{j}"
            if kind == 0:
                assert str(pipe.generate(prompt, max_new_tokens=10)) == f"Echo: {prompt}"
            elif kind == 1:
                with pipe.stream(prompt, max_new_tokens=10) as it:
                    assert "".join(it) == f"Echo: {prompt}"
            elif kind == 2:
                msgs = [{"role": "user", "content": prompt}]
                assert str(pipe.generate(msgs, max_new_tokens=10)) == f"Echo: {prompt}"
            else:
                pieces = []
                res = pipe.generate(prompt, max_new_tokens=10, streamer=pieces.append)
                assert "".join(pieces) == str(res) == f"Echo: {prompt}"
            STATS.case("concurrency")

    failures = run_threads(worker, 8)
    assert not failures, failures[:5]
    assert dbl.ctl.ovd_concurrent_violations() == 0
    tids = {tid for op, _, tid in dbl.thread_log() if op == "generate"}
    assert tids == {owner}
    assert dbl.ctl.ovd_last_generate_status() == 0


def test_8_threads_async_streams_on_one_pipeline(make_pipe, dbl):
    """Each thread runs its own event loop consuming astream() on the same pipeline."""
    pipe = make_pipe()

    def worker(i):
        async def main():
            for j in range(10):
                text = "".join([p async for p in pipe.astream(f"a{i} b{j}", max_new_tokens=10)])
                assert text == f"Echo: a{i} b{j}"
                STATS.case("concurrency")

        asyncio.run(main())

    failures = run_threads(worker, 8)
    assert not failures, failures[:3]
    assert dbl.ctl.ovd_concurrent_violations() == 0


@pytest.mark.parametrize("seed", range(12))
def test_close_racing_running_generates(seed, dbl, rel_model_dir):
    """close() at a random moment while 4 threads generate: every call either completes with the right text or
    raises PipelineClosedError; close waits for the running call, then frees on the owner thread."""
    STATS.case("concurrency")
    rng = random.Random(seed)
    dbl.delay(rng.choice([0, 500, 2000]))
    pipe = ovgenai_c.LLMPipeline(rel_model_dir, library=dbl.library)
    owner = pipe.owner_thread_id
    outcomes = {"ok": 0, "closed": 0, "bad": []}
    lock = threading.Lock()

    def worker(i):
        for j in range(1000):
            try:
                use_stream = (i + j) % 2
                if use_stream:
                    with pipe.stream(f"x{i} y{j} z", max_new_tokens=10) as it:
                        text = "".join(it)
                else:
                    text = str(pipe.generate(f"x{i} y{j} z", max_new_tokens=10))
                with lock:
                    if text == f"Echo: x{i} y{j} z":
                        outcomes["ok"] += 1
                    else:
                        outcomes["bad"].append(text)
            except errors.PipelineClosedError:
                with lock:
                    outcomes["closed"] += 1
                return
            except BaseException as exc:
                with lock:
                    outcomes["bad"].append(repr(exc))
                return

    threads = start_threads(worker, 4)
    time.sleep(rng.uniform(0.0, 0.05))
    t0 = time.monotonic()
    pipe.close()
    took = time.monotonic() - t0
    assert not threads.join(10)  # the worker reports what it met in outcomes
    assert took < 3.0, f"close took {took:.2f} s"
    assert not outcomes["bad"], outcomes["bad"][:3]
    assert outcomes["closed"] == 4
    assert dbl.live("pipeline") == 0
    frees = [tid for op, _, tid in dbl.thread_log() if op == "free"]
    assert frees == [owner]
    assert dbl.ctl.ovd_concurrent_violations() == 0


def test_close_from_many_threads_at_once_frees_once(dbl, rel_model_dir):
    for _ in range(10):
        STATS.case("concurrency")
        dbl.ctl.ovd_clear_thread_log()
        pipe = ovgenai_c.LLMPipeline(rel_model_dir, library=dbl.library)
        barrier = threading.Barrier(8)

        def closer(_):
            barrier.wait()
            pipe.close()

        errs = run_threads(closer, 8, timeout=10)
        assert not errs
        assert [op for op, _, _ in dbl.thread_log()].count("free") == 1
        assert dbl.live("pipeline") == 0


def test_close_while_a_stream_is_being_consumed_elsewhere(dbl, rel_model_dir):
    dbl.delay(1000)
    pipe = ovgenai_c.LLMPipeline(rel_model_dir, library=dbl.library)
    it = pipe.stream(" ".join(["w"] * 60), max_new_tokens=1000)
    first = next(it)
    closer = start_threads(lambda _: pipe.close(), 1)
    rest = "".join(it)  # the stream finishes (close waits for it) and its text is whole
    assert not closer.join(10)
    assert first + rest == "Echo: " + " ".join(["w"] * 60)
    assert dbl.live("pipeline") == 0
    STATS.case("concurrency")


def test_gc_of_never_closed_pipelines_frees_each_on_its_owner(dbl, rel_model_dir):
    owners = set()
    for i in range(40):
        p = ovgenai_c.LLMPipeline(rel_model_dir, library=dbl.library)
        owners.add(p.owner_thread_id)
        assert str(p.generate(f"p{i}", max_new_tokens=3)) == f"Echo: p{i}"
        if i % 3 == 0:
            it = p.stream("left open", max_new_tokens=5)  # a stream left half-read keeps the pipe alive
            next(it)
            del it
        del p
        STATS.case("concurrency")
    gc.collect()
    deadline = time.monotonic() + 10
    while dbl.live("pipeline") and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert dbl.live("pipeline") == 0
    frees = {tid for op, _, tid in dbl.thread_log() if op == "free"}
    assert frees <= owners and len(frees) == 40


def test_many_pipelines_created_and_dropped_from_many_threads(dbl, rel_model_dir):
    baseline = threading.active_count()

    def worker(i):
        for j in range(25):
            p = ovgenai_c.LLMPipeline(rel_model_dir, library=dbl.library)
            assert str(p.generate(f"m{i} n{j}", max_new_tokens=5)) == f"Echo: m{i} n{j}"
            if j % 2:
                p.close()
            del p
            STATS.case("concurrency")

    failures = run_threads(worker, 8)
    assert not failures, failures[:3]
    deadline = time.monotonic() + 10
    while (dbl.live("pipeline") or threading.active_count() > baseline) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.02)
    assert dbl.live("pipeline") == 0
    assert threading.active_count() <= baseline, "owner threads outlived their pipelines"
    assert dbl.ctl.ovd_concurrent_violations() == 0


# A finalizer runs inside whatever Python code the collecting thread is executing (PyPy: any thread, any line),
# even code that holds the dropped pipeline's own lock or its owner queue's. Tracing fires the dropped pipelines'
# finalizer callback at every line of the locking code (queue, threading, the pipeline and owner modules) on every
# thread. Before: the finalizer took the pipeline's lock (held by the very free it interrupted) and, on PyPy, the
# owner's queue's Condition (held by the owner's get): either deadlocked that thread, and the pipeline stayed live.
FINALIZER_ANYWHERE = """
import gc, threading, time, tempfile
ffi, ctl = _ctl()
import ovgenai_c
from ovgenai_c import pipeline as P
from ovgenai_c.pipeline import IR_FILES
model = tempfile.mkdtemp()
for n in IR_FILES:
    open(os.path.join(model, n), "w").close()
WHERE = ("/queue.py", "/threading.py", "/ovgenai_c/pipeline.py", "/ovgenai_c/_owner.py")
dropped = []
fired = {}
def fire(frame, event, arg):
    if event == "line":
        for st in list(dropped):
            if fired.get(id(st), 0) < 40:
                fired[id(st)] = fired.get(id(st), 0) + 1
                P._finalize(st)
    return fire
def trace(frame, event, arg):
    return fire if frame.f_code.co_filename.endswith(WHERE) else None
sys.settrace(trace)
threading.settrace(trace)
def worker(i):
    for j in range(4):
        p = ovgenai_c.LLMPipeline(model, library=DOUBLE)
        assert str(p.generate("m%d n%d" % (i, j), max_new_tokens=3)) == "Echo: m%d n%d" % (i, j)
        dropped.append(p._state)
        del p
threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
sys.settrace(None)
threading.settrace(None)
deadline = time.monotonic() + 10
while (ctl.ovd_live(b"pipeline") or threading.active_count() > 1) and time.monotonic() < deadline:
    settle_garbage()
    time.sleep(0.02)
print(json.dumps({"pipelines": ctl.ovd_live(b"pipeline"), "fired": sum(fired.values()), "dropped": len(dropped),
                  "threads": threading.active_count()}))
"""


def test_a_finalizer_firing_inside_any_locking_code_frees_its_pipeline(double_lib_path):
    STATS.case("concurrency")
    rep = last_json(run_snippet(FINALIZER_ANYWHERE, double=double_lib_path, timeout=60, group="finalizer-anywhere"))
    assert rep["dropped"] == 12 and rep["fired"] >= 12, rep
    assert rep["pipelines"] == 0, rep
    assert rep["threads"] == 1, rep


def test_300_pipelines_alive_at_once(dbl, rel_model_dir):
    """Each pipeline owns a thread: hundreds at once must work and every thread must end after close."""
    baseline = threading.active_count()
    pipes = [ovgenai_c.LLMPipeline(rel_model_dir, library=dbl.library) for _ in range(300)]
    assert threading.active_count() >= baseline + 300
    for i, p in enumerate(pipes):
        if i % 10 == 0:
            assert str(p.generate(f"n{i}", max_new_tokens=3)) == f"Echo: n{i}"
    assert dbl.live("pipeline") >= 300
    for i, p in enumerate(pipes):
        if i % 2:
            p.close()
    del pipes, p
    gc.collect()
    deadline = time.monotonic() + 10
    while (dbl.live("pipeline") or threading.active_count() > baseline) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.02)
    assert dbl.live("pipeline") == 0
    assert threading.active_count() <= baseline
    STATS.case("concurrency", 300)
