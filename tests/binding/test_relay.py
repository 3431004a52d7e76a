"""The relay (native/src/relay, cdefs/94_ovgenai_relay.h): a plain generate() reaches the pipeline's owner thread
through it, C to C, with no Python job and no interpreter lock on either hand-off. The C contract on its own (a
Python thread serving, cffi callbacks as the relayed calls), then the pipeline on the ABI double: which calls take
it, that C still runs on the owner thread, and that cancellation, Ctrl-C, close and the fallback without the helper
behave as for a Python job."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import ovgenai_c
from ovgenai_c import _ffi, _owner, _relay

pytestmark = pytest.mark.skipif(_relay.library() is None, reason="the relay helper (libovgenai_c_relay.so) is not built")


# ---- the C contract ------------------------------------------------------------------------------------------

class _Served:
    """A relay and a Python thread serving it until stopped; ``returns`` counts serve()'s returns."""

    def __init__(self) -> None:
        self.relay = _relay.new_relay()
        self.returns = 0
        self.stopping = False
        self.ident = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.ident = threading.get_ident()
        while not self.stopping:
            assert self.relay.serve() == 0
            self.returns += 1

    def start(self) -> "_Served":
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.relay.reserve():  # serving as soon as the thread is inside serve()
            assert time.monotonic() < deadline
            time.sleep(0.001)
        self.relay.unreserve()
        return self

    def stop(self) -> None:
        self.stopping = True
        self.relay.wake()
        self.thread.join(10)
        assert not self.thread.is_alive()


def _fn(record, status=7, sleep=0.0):
    ffi = _ffi.get_ffi()

    @ffi.callback("ovgenai_relay_fn")
    def fn(a0, a1, a2, a3, a4):
        if sleep:
            time.sleep(sleep)
        record.append((threading.get_ident(), int(ffi.cast("uintptr_t", a0)), ffi.string(ffi.cast("char*", a1))))
        return status

    return fn


def test_a_posted_call_runs_on_the_serving_thread_and_its_status_comes_back():
    served = _Served()
    assert not served.relay.reserve()  # nobody serves yet: the call must go another way
    served.start()
    ffi = _ffi.get_ffi()
    record = []
    fn = _fn(record, status=7)
    text = ffi.new("char[]", b"prompt")
    for _ in range(3):
        assert served.relay.reserve()
        assert not served.relay.reserve()  # one call at a time
        served.relay.post(fn, ffi.cast("void*", 42), text, ffi.NULL, ffi.NULL, ffi.NULL)
        assert served.relay.wait(10, served.relay.status_cell()) == (7, None)
    assert record == [(served.ident, 42, b"prompt")] * 3
    assert served.returns == 0  # the calls ran inside serve(), which never returned for them
    served.stop()
    assert served.returns == 1


def test_a_wake_up_waits_for_a_reserved_call_and_a_late_caller_is_refused():
    served = _Served().start()
    ffi = _ffi.get_ffi()
    record = []
    assert served.relay.reserve()
    served.relay.wake()  # e.g. a Python job queued meanwhile: serve() returns only after the reserved call
    time.sleep(0.05)
    assert served.returns == 0
    fn, text = _fn(record), ffi.new("char[]", b"x")  # (both kept alive until the call has ended)
    served.relay.post(fn, ffi.NULL, text, ffi.NULL, ffi.NULL, ffi.NULL)
    assert served.relay.wait(10, served.relay.status_cell()) == (7, None)
    deadline = time.monotonic() + 10
    while served.returns == 0:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    # the serving thread went back into serve(): a caller gets the slot again
    deadline = time.monotonic() + 10
    while not served.relay.reserve():
        assert time.monotonic() < deadline
        time.sleep(0.001)
    served.relay.unreserve()
    served.stop()


def test_wait_times_out_and_a_later_wait_collects_the_end():
    served = _Served().start()
    ffi = _ffi.get_ffi()
    record = []
    assert served.relay.reserve()
    fn, text = _fn(record, status=3, sleep=0.3), ffi.new("char[]", b"slow")
    served.relay.post(fn, ffi.NULL, text, ffi.NULL, ffi.NULL, ffi.NULL)
    cell = served.relay.status_cell()
    assert served.relay.wait(0.01, cell) is None and not served.relay.done()
    deadline = time.monotonic() + 10
    while not served.relay.done():
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert not served.relay.reserve()  # ended, not collected: the slot is still the caller's
    assert served.relay.wait(0, cell) == (3, None)
    assert served.relay.reserve()
    served.relay.unreserve()
    served.stop()


def test_the_main_threads_wait_ends_on_the_call_or_on_a_signals_number_and_forwards_it():
    """wait_fd (Python's main thread: the pipe's write end is then its signal wakeup fd) ends when the call ends,
    returns False as soon as a signal's number (a non-zero byte) arrives, hands that number on to the wakeup fd
    that was set before, and times out; zero bytes left by earlier waits are skipped."""
    served = _Served().start()
    ffi = _ffi.get_ffi()
    record = []
    r, w = os.pipe()
    fr, fw = os.pipe()  # the "previous" wakeup fd (e.g. an asyncio loop's)
    for fd in (r, w, fr):
        os.set_blocking(fd, False)
    try:
        assert served.relay.reserve()
        fn, text = _fn(record, status=4, sleep=0.4), ffi.new("char[]", b"slow")
        served.relay.post(fn, ffi.NULL, text, ffi.NULL, ffi.NULL, ffi.NULL)
        cell = served.relay.status_cell()
        os.write(w, b"\0\0")  # stale wake-ups of earlier waits: no end, no signal
        t0 = time.monotonic()
        assert served.relay.wait_fd(0.05, cell, r, w, fw) is None  # the timeout
        assert 0.04 <= time.monotonic() - t0 < 0.3
        threading.Timer(0.05, os.write, (w, bytes([2]))).start()  # what Python's handler writes for SIGINT
        assert served.relay.wait_fd(None, cell, r, w, fw) is False
        assert os.read(fr, 16) == bytes([2])  # forwarded
        assert not served.relay.done()
        assert served.relay.wait_fd(None, cell, r, w, -1) == (4, None)  # then the call's end
        assert record and time.monotonic() - t0 >= 0.35
        with pytest.raises(BlockingIOError):
            os.read(r, 16)  # the end's zero byte was read by the wait
        # an interrupt that cut off the wait's return leaves the status in the call's cell: a new wait returns it
        # without waiting for anything (the slot was freed)
        assert served.relay.wait(None, cell) == (4, None)
        assert served.relay.reserve()
        served.relay.unreserve()
    finally:
        for fd in (r, w, fr, fw):
            os.close(fd)
    served.stop()


def test_spinning_sides_pick_up_short_calls_and_then_sleep():
    """With the spins on (the default: the owner watches for the next call a moment after each call that came soon
    after the one before, a caller for a call's end when the last call was that short), back-to-back short calls from
    two threads all come back right, a wake-up still makes serve() return at once, and an idle relay uses no CPU."""
    served = _Served()
    ffi = _ffi.get_ffi()
    _relay.library().ovgenai_relay_set_spin(served.relay.ptr, 1000, 100)
    served.start()
    record = []
    fns = {n: _fn(record, status=n) for n in range(1, 5)}
    text = ffi.new("char[]", b"t")
    got = []

    def caller(base):
        for i in range(300):
            n = base + i % 2
            while not served.relay.reserve():  # the other thread has the slot
                time.sleep(0)
            served.relay.post(fns[n], ffi.NULL, text, ffi.NULL, ffi.NULL, ffi.NULL)
            got.append((n, served.relay.wait(10, served.relay.status_cell())))

    threads = [threading.Thread(target=caller, args=(b,)) for b in (1, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(got) == 600 and all(out == (n, None) for n, out in got)
    assert {r[0] for r in record} == {served.ident}
    cpu0, wall0 = time.process_time(), time.monotonic()
    time.sleep(0.5)  # nobody calls: the owner's spin (at most 1 ms) is over and it sleeps
    assert time.process_time() - cpu0 < 0.1 * (time.monotonic() - wall0)
    assert served.relay.reserve()
    served.relay.post(fns[1], ffi.NULL, text, ffi.NULL, ffi.NULL, ffi.NULL)
    assert served.relay.wait(10, served.relay.status_cell()) == (1, None)
    t0 = time.monotonic()
    served.stop()  # a wake-up right after a call (the owner spinning): serve() returns at once
    assert time.monotonic() - t0 < 0.5


def test_a_failed_calls_text_is_read_on_the_serving_thread_and_handed_over():
    served = _Served()
    ffi = _ffi.get_ffi()
    seen = []
    text = ffi.new("char[]", b"the owner's own error text")

    @ffi.callback("ovgenai_relay_error_fn")
    def error_source():
        seen.append(threading.get_ident())  # thread-local in a real library: must be the serving thread
        return text

    served.relay.set_error_source(error_source)
    served.start()
    record = []
    ok, failing, prompt = _fn(record, status=0), _fn(record, status=5), ffi.new("char[]", b"p")
    assert served.relay.reserve()
    served.relay.post(failing, ffi.NULL, prompt, ffi.NULL, ffi.NULL, ffi.NULL)
    assert served.relay.wait(10, served.relay.status_cell()) == (5, "the owner's own error text")
    assert seen == [served.ident]
    assert served.relay.reserve()  # the slot is free again once the text was taken
    served.relay.post(ok, ffi.NULL, prompt, ffi.NULL, ffi.NULL, ffi.NULL)
    assert served.relay.wait(10, served.relay.status_cell()) == (0, None) and seen == [served.ident]  # no text asked for a success
    served.stop()


def test_post_read_reads_the_results_text_on_the_serving_thread_into_the_callers_buffer():
    """post_read: once the call returned 0, reader(*a4, buf, size) runs on the owner before the caller is woken;
    size says what it left there, or NOT_READ when the call failed, wrote no results, or the reader failed (a buffer
    too small included): the caller then reads the text itself."""
    served = _Served().start()
    ffi = _ffi.get_ffi()
    readers = []
    results = ffi.new("char[]", b"the answer")

    def call(status, fill):
        @ffi.callback("ovgenai_relay_fn")
        def fn(a0, a1, a2, a3, a4):
            ffi.cast("void**", a4)[0] = results if fill else ffi.NULL
            return status
        return fn

    @ffi.callback("ovgenai_relay_reader_fn")
    def reader(res, buf, size):
        readers.append(threading.get_ident())
        text = ffi.string(ffi.cast("char*", res)) + b"\0"
        if size[0] < len(text):
            return -6  # OUT_OF_BOUNDS, as the C API's two-call getters
        ffi.memmove(buf, text, len(text))
        size[0] = len(text)
        return 0

    def run(fn, capacity):
        buf, size, out = ffi.new("char[]", capacity), ffi.new("size_t*", capacity), ffi.new("void**")
        assert served.relay.reserve()
        served.relay.post_read(fn, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, out, reader, buf, size)
        status = served.relay.wait(10, served.relay.status_cell())
        return status, size[0], ffi.string(buf)

    assert run(call(0, True), 64) == ((0, None), 11, b"the answer")
    assert readers == [served.ident]
    assert run(call(0, True), 4)[:2] == ((0, None), _relay.NOT_READ)  # too small: the reader refused
    assert run(call(3, True), 64)[:2] == ((3, None), _relay.NOT_READ)  # the call failed: not read
    assert run(call(0, False), 64)[:2] == ((0, None), _relay.NOT_READ)  # no results: not read
    assert len(readers) == 2
    served.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the steady clock is CLOCK_MONOTONIC on Linux")
def test_last_call_times_are_the_owners_start_and_end_on_the_callers_clock():
    served = _Served().start()
    ffi = _ffi.get_ffi()
    assert served.relay.last_call_times() is None  # no call has run
    text = ffi.new("char[]", b"p")
    assert served.relay.reserve()
    fn = _fn([], status=0, sleep=0.05)  # (kept: C calls it after post returns)
    before = time.monotonic_ns()
    served.relay.post(fn, ffi.NULL, text, ffi.NULL, ffi.NULL, ffi.NULL)
    assert served.relay.wait(10, served.relay.status_cell()) == (0, None)
    after = time.monotonic_ns()
    started, ended = served.relay.last_call_times()
    assert before <= started < ended <= after
    assert ended - started >= 50_000_000  # the call's 50 ms sleep
    served.stop()


def _warm_until(call, done, tries: int = 200) -> bool:
    """Repeat ``call()`` until ``done()``. A call made while the owner is still on its way back into its relay (after
    a Python job) goes as a Python job again; on a loaded machine that can happen many times in a row, so the tries
    pause a little (up to 10 ms) to let the owner get there."""
    for i in range(tries):
        call()
        if done():
            return True
        time.sleep(0.001 * min(i, 10))
    return False


# ---- the pipeline ----------------------------------------------------------------------------------------------

@pytest.fixture
def relayed(monkeypatch):
    """Counts the calls that went through a relay."""
    made = []
    original = _owner.RelayJob.__init__

    def init(self, *a, **k):
        made.append(self)
        original(self, *a, **k)

    monkeypatch.setattr(_owner.RelayJob, "__init__", init)
    return made


def test_plain_generate_calls_take_the_relay_and_c_still_runs_on_the_owner(make_pipe, double, relayed):
    pipe = make_pipe()
    assert pipe._state.owner.relay is not None
    double.reset()
    # the first call makes the pipeline's call buffers on the owner (a Python job); a call made before the owner is
    # back in the relay after a Python job goes as one too — once a call has gone through the relay, the owner
    # stays in it, so every later plain call from this thread does
    def echo():
        assert str(pipe.generate("a b c", max_new_tokens=2)) == "Echo: a "

    assert _warm_until(echo, lambda: bool(relayed))
    before = len(relayed)
    outs = [str(pipe.generate("a b c", max_new_tokens=2)) for _ in range(5)]
    assert outs == ["Echo: a "] * 5 and len(relayed) == before + 5
    owner = pipe.owner_thread_id
    assert {tid for op, _, tid in double.thread_log() if op == "generate"} == {owner}
    # results read lazily from the relayed calls, and nothing native left behind once the pipeline goes
    res = pipe.generate("x y", max_new_tokens=5)
    assert res.perf_metrics.get_num_generated_tokens() > 0 and res.finish_reason == "stop"
    kept = pipe.generate("x y", max_new_tokens=5)  # results never read: the close reads and frees them
    pipe.close()
    assert double.live() == 0
    assert kept.finish_reason == "stop"


def test_a_relayed_calls_text_is_read_on_the_owner_and_a_longer_one_by_the_caller(make_pipe, monkeypatch):
    """The owner reads a relayed call's text into the call's own buffer right after C returns; an answer longer than
    that buffer is read by the caller (two-call), and the next calls' buffers are made that long."""
    from ovgenai_c._capi import llm_pipeline

    pipe = make_pipe()
    sizes = []
    original = llm_pipeline.PromptCall.conclude

    def conclude(self, status, error_text=None):
        sizes.append(self.read_size[0] if self.read_size is not None else None)
        return original(self, status, error_text)

    monkeypatch.setattr(llm_pipeline.PromptCall, "conclude", conclude)
    def echo():
        assert str(pipe.generate("a b c", max_new_tokens=2)) == "Echo: a "

    _warm_until(echo, lambda: bool(sizes))
    assert sizes[-1] == len("Echo: a ") + 1  # read on the owner (the size with its NUL)
    words = " ".join(f"word{i}" for i in range(1200))
    expected = "Echo: " + words
    assert len(expected) > llm_pipeline.TEXT_BUFFER_BYTES
    assert str(pipe.generate(words, max_new_tokens=1300)) == expected
    assert sizes[-1] == _relay.NOT_READ  # did not fit: the caller read it
    assert str(pipe.generate(words, max_new_tokens=1300)) == expected
    assert sizes[-1] == len(expected) + 1  # the buffer grew: the owner read it
    pipe.close()


def test_calls_that_need_owner_side_work_go_as_python_jobs(make_pipe, relayed):
    pipe = make_pipe()
    pipe.generate("a", max_new_tokens=1)
    before = len(relayed)
    pipe.generate("a b", max_new_tokens=3, streamer=lambda t: None)  # a streamer: its text crosses per token
    pipe.generate([{"role": "user", "content": "hi"}], max_new_tokens=2)  # a conversation
    assert len(relayed) == before


def test_threads_share_a_pipeline_through_relay_and_queue_alike(make_pipe, double, relayed):
    pipe = make_pipe()
    double.delay(200)
    # until the owner serves its relay (then the threads start with both paths open)
    assert _warm_until(lambda: pipe.generate("warm", max_new_tokens=1), lambda: bool(relayed))
    errors = []

    def worker(i: int) -> None:
        try:
            for k in range(15):
                words = f"w{i} k{k} z"
                assert str(pipe.generate(words, max_new_tokens=2)) == f"Echo: w{i} "
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    # whichever way each call went (through the relay when the owner was idle in it, else as a Python job queued
    # behind the others), every text is its own and C ran on the owner only
    assert not errors and not any(t.is_alive() for t in threads)
    assert {tid for op, _, tid in double.thread_log() if op == "generate"} == {pipe.owner_thread_id}


def test_a_timeout_cancels_a_relayed_call_natively(make_pipe, double, relayed):
    pipe = make_pipe()
    # the owner's cancel mode becomes the text one; then until a call went through the relay
    assert _warm_until(lambda: pipe.generate("warm", timeout=5, max_new_tokens=1), lambda: bool(relayed))
    double.delay(50000)
    before = len(relayed)
    t0 = time.monotonic()
    with pytest.raises(ovgenai_c.GenerationTimeoutError):
        pipe.generate(" ".join(["w"] * 200), timeout=0.2, max_new_tokens=150)
    assert time.monotonic() - t0 < 5
    assert len(relayed) == before + 1
    double.delay(0)
    assert str(pipe.generate("a b", timeout=5, max_new_tokens=2)) == "Echo: a "


def _child(double_lib_path, body: str, env=None) -> subprocess.CompletedProcess:
    from abi_double.controls import make_model_dir  # noqa: F401 (the child imports it)

    code = textwrap.dedent(f"""
        import os, signal, sys, tempfile, threading, time, _thread
        from pathlib import Path
        sys.path.insert(0, {os.path.dirname(os.path.dirname(__file__))!r})
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import ovgenai_c
        from abi_double.controls import Double, make_model_dir
        lib = ovgenai_c.load_library({str(double_lib_path)!r})
        dbl = Double(Path({str(double_lib_path)!r}))
        model = make_model_dir(Path(tempfile.mkdtemp()) / "m")
        pipe = ovgenai_c.LLMPipeline(model, "CPU", library=lib)
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_ctrl_c_cancels_a_relayed_call_and_exit_frees_everything(double_lib_path):
    proc = _child(double_lib_path, """
        from ovgenai_c import _owner
        made = []
        init = _owner.RelayJob.__init__
        _owner.RelayJob.__init__ = lambda self, *a: (made.append(1), init(self, *a))[1]
        for i in range(200):  # until a call has gone through the relay: the owner then stays in it
            pipe.generate("warm", max_new_tokens=1)
            if made:
                break
            time.sleep(0.001 * min(i, 10))
        dbl.delay(20000)
        threading.Timer(0.3, _thread.interrupt_main).start()
        t0 = time.monotonic()
        try:
            pipe.generate(" ".join(["w"] * 300), max_new_tokens=250)
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted", round(time.monotonic() - t0, 1) < 3, len(made) >= 2)
        dbl.delay(0)
        print(str(pipe.generate("a b", max_new_tokens=2)))
        dbl.delay(20000)
        threading.Thread(target=lambda: pipe.generate(" ".join(["w"] * 300), max_new_tokens=250),
                         daemon=True).start()
        time.sleep(0.3)
        print("exiting")
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:3] == ["interrupted True True", "Echo: a ", "exiting"], proc.stdout


def test_without_the_helper_every_call_is_a_python_job(double_lib_path):
    proc = _child(double_lib_path, """
        print(pipe._state.owner.relay is None, str(pipe.generate("a b c", max_new_tokens=2)))
    """, env={"OVGENAI_C_RELAY": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", "Echo:", "a"]


def test_a_forked_child_can_drop_a_relay_whose_owner_waits_in_the_parent():
    """The parent's owner thread waits in serve(); a forked child that frees the relay (its copy) must not wait for
    that thread, which the child does not have (destroying the condition variable would)."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    code = textwrap.dedent("""
        import os, sys, threading, time
        from ovgenai_c import _relay
        relay = _relay.new_relay()
        threading.Thread(target=relay.serve, daemon=True).start()
        while not relay.reserve():
            time.sleep(0.001)
        relay.unreserve()  # the serving thread now waits on the condition variable
        pid = os.fork()
        if pid == 0:
            relay.ffi.release(relay.ptr)  # ovgenai_relay_free in the child
            print("child freed", flush=True)
            os._exit(0)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print("child exit", os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.02)
        else:
            os.kill(pid, 9)
            print("child hung")
        relay.wake()
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[:2] == ["child freed", "child exit 0"], proc.stdout


@pytest.mark.parametrize("lost_call_fails", [False, True])
def test_an_interrupt_right_after_the_post_leaves_nothing_broken(make_pipe, double, relayed, monkeypatch,
                                                                 lost_call_fails):
    """Ctrl-C can land between any two bytecodes: here right after the call was posted, before anyone waits for it.
    What C uses stays alive, the next call collects it (its slot free again) without taking on its outcome (a
    failure of the lost call is nobody's to raise), and close frees everything."""
    pipe = make_pipe()
    assert _warm_until(lambda: pipe.generate("warm", max_new_tokens=1), lambda: bool(relayed))
    originals = {name: getattr(_relay.Relay, name) for name in ("post", "post_read")}

    def interrupting(name):
        def post_then_interrupt(self, *a):
            originals[name](self, *a)
            raise KeyboardInterrupt
        return post_then_interrupt

    for name in originals:
        monkeypatch.setattr(_relay.Relay, name, interrupting(name))
    if lost_call_fails:
        double.fail("ov_genai_llm_pipeline_generate", -17, 0)
    with pytest.raises(KeyboardInterrupt):
        pipe.generate("lost call", max_new_tokens=2)
    for name, original in originals.items():
        monkeypatch.setattr(_relay.Relay, name, original)
    deadline = time.monotonic() + 10
    while not pipe._state.owner.relay.done():  # the lost call ends on the owner all the same
        assert time.monotonic() < deadline
        time.sleep(0.001)
    if lost_call_fails:
        double.fail("ov_genai_llm_pipeline_generate", 0, 0)  # (status 0: no fault)
    before = len(relayed)
    assert str(pipe.generate("a b c", max_new_tokens=2)) == "Echo: a "  # collects the lost one, then relayed
    assert len(relayed) == before + 1
    pipe.close()
    assert double.live() == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the steady clock is CLOCK_MONOTONIC on Linux")
def test_the_handoff_probe_splits_a_calls_time_outside_the_library_into_parts_that_add_up(make_pipe, double):
    from ovgenai_c_tools.bench import call_handoff

    pipe = make_pipe()
    double.delay(300)
    _warm_until(lambda: pipe.generate("warm", max_new_tokens=1),  # until calls go through the relay
                lambda: pipe._state.relay_job is None and pipe._state.owner.relay.last_call_times() is not None)
    out = call_handoff.measure(pipe, tokens=4, calls=12, prompt="a b c d e")
    assert out["calls"] + out["not_relayed"] == 12 and out["calls"] >= 6
    means = out["mean_us"]
    assert abs(sum(means[p] for p in call_handoff.PARTS) - means["total_outside"]) < 1.0
    for part in ("python_before_post", "handoff_to_owner", "handoff_back", "python_after_wait"):
        assert out["median_us"][part] >= 0, part
    # the probe's wrappers are gone again
    assert _relay.Relay.post.__name__ == "post" and _relay.Relay.wait.__name__ == "wait"
    pipe.close()
