"""On the official library a generate() with neither streamer nor timeout runs without a callback, as pybind's
generate: GenAI detokenises every token for any streamer, a cancel check included (6-8 % of the time per token,
measured against the official 2026.4.1 library). With a streamer or a timeout the callback is there and cancels.

The double is loaded under the official library's file name (the loader tells the kinds apart by it), in a child
interpreter: a second copy of a GenAI library in the test process would mix with the first, and a wait that never
ends fails by timeout instead of hanging the run."""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _run(official_lib: Path, model: Path, body: str) -> str:
    code = textwrap.dedent(f"""
        import _thread, signal, sys, threading, time
        sys.path.insert(0, {str(TESTS)!r})
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import ovgenai_c
        from abi_double.controls import Double
        double = Double({str(official_lib)!r})
        pipe = ovgenai_c.LLMPipeline({str(model)!r}, "CPU", library=double.library)
        assert pipe._library.kind == "official", pipe._library.kind
        long_prompt = " ".join(["w"] * 60)
    """) + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def _official_copy(double_lib_path: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "official"
    folder.mkdir()
    return Path(shutil.copy(double_lib_path, folder / "libopenvino_genai_c.so"))


def test_a_plain_generate_passes_no_callback_and_a_streamer_or_timeout_does(double_lib_path, model_dir, tmp_path):
    out = _run(_official_copy(double_lib_path, tmp_path), model_dir, """
        ctl = double.ctl
        ctl.ovd_reset()
        print("plain", str(pipe.generate("a b c", max_new_tokens=5)), ctl.ovd_callback_count())
        seen = []
        print("streamer", str(pipe.generate("a b c", max_new_tokens=5, streamer=seen.append)),
              ctl.ovd_callback_count() > 0, "".join(seen))
        ctl.ovd_reset()
        print("timeout", str(pipe.generate("a b c", max_new_tokens=5, timeout=30)), ctl.ovd_callback_count() > 0)
        ctl.ovd_reset()
        print("stream", "".join(pipe.stream("a b c", max_new_tokens=5)), ctl.ovd_callback_count() > 0)
    """)
    lines = [line for line in out.splitlines() if line.split(" ")[0] in ("plain", "streamer", "timeout", "stream")]
    assert lines == ["plain Echo: a b c 0", "streamer Echo: a b c True Echo: a b c", "timeout Echo: a b c True",
                     "stream Echo: a b c True"]


def test_ctrl_c_during_a_plain_generate_waits_for_its_end_and_says_why(double_lib_path, model_dir, tmp_path):
    """No callback reaches C: the interrupt is raised once the call returns (every token generated, the results
    freed), with one line on stderr naming the way out; the same call with timeout= is cancelled at once."""
    out = _run(_official_copy(double_lib_path, tmp_path), model_dir, """
        ctl = double.ctl
        ctl.ovd_set_token_delay_us(10000)           # 60 tokens: ~0.6 s
        threading.Timer(0.1, _thread.interrupt_main).start()
        t0 = time.monotonic()
        try:
            pipe.generate(long_prompt, max_new_tokens=1000)
        except KeyboardInterrupt:
            print("plain interrupted after", round(time.monotonic() - t0, 2), ctl.ovd_live(b"results"))
        threading.Timer(0.1, _thread.interrupt_main).start()
        t0 = time.monotonic()
        try:
            pipe.generate(long_prompt, max_new_tokens=1000, timeout=60)
        except KeyboardInterrupt:
            print("timeout interrupted after", round(time.monotonic() - t0, 2), ctl.ovd_last_callback_status())
        ctl.ovd_set_token_delay_us(2000)
        def cancel_soon():                          # what close() or exit would ask of the running call
            while pipe._state.active is None:
                time.sleep(0.001)
            pipe._state.active.cancel("test")
        threading.Thread(target=cancel_soon).start()
        r = pipe.generate(long_prompt, max_new_tokens=20)
        print("cancelled plain", r.finish_reason, r.perf_metrics.get_num_generated_tokens())
        ctl.ovd_set_token_delay_us(0)
        print("after", str(pipe.generate("ok", max_new_tokens=3)))
    """)
    assert "cancelled plain length 20" in out  # the cancel never reached C: not reported as a cancel
    plain = next(line for line in out.splitlines() if line.startswith("plain interrupted"))
    assert float(plain.split()[3]) >= 0.5 and plain.endswith(" 0"), out  # ran to its end; nothing left alive
    assert "cannot be cancelled; pass timeout= or a streamer" in out
    cancelled = next(line for line in out.splitlines() if line.startswith("timeout interrupted"))
    assert float(cancelled.split()[3]) < 0.4 and cancelled.endswith(" 2"), out  # CANCEL within a token
    assert "after Echo: ok" in out
