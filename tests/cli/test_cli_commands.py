"""The ``ovgenai-c`` command line in subprocesses, against the ABI double (and the bundled backend when built)."""
from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import ROOT, cli_env, driver_args, make_ir, run_cli


def _no_traceback(proc):
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


# --- generate ---------------------------------------------------------------------------------------------
def test_generate_streams_the_answer(env, model):
    r = run_cli(env, "generate", str(model), "What is the capital of France?")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Echo: What is the capital of France?\n"
    _no_traceback(r)


def test_generate_no_stream_and_options(env, model):
    r = run_cli(env, "generate", str(model), "one two three four", "--no-stream", "-n", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Echo: one \n"
    r = run_cli(env, "generate", str(model), "alpha beta", "--stop", "ta", "--temperature", "0")
    assert r.stdout == "Echo: alpha be\n"


def test_generate_json(env, model):
    r = run_cli(env, "generate", str(model), "hello there", "--json", "--max-tokens", "2", "--system", "sys")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["text"] == "Echo: hello " and doc["finish_reason"] == "length"
    assert doc["usage"]["completion_tokens"] == 2 and doc["usage"]["prompt_tokens"] > 0
    assert doc["perf"]["ttft"]["mean"] > 0 and doc["perf"]["throughput"]["mean"] > 0
    assert doc["model"] == str(model) and doc["device"] == "CPU" and doc["library_kind"] == "other"


def test_generate_model_from_the_catalog(env, tmp_path):
    root = tmp_path / "models"
    make_ir(root / "fam" / "m1")
    r = run_cli(env, "generate", "fam/m1", "hi", "--models-root", str(root))
    assert r.returncode == 0 and r.stdout == "Echo: hi\n", r.stderr
    env2 = dict(env, OVGENAI_C_MODELS=str(root))
    r = run_cli(env2, "--device", "CPU", "generate", "fam/m1", "hey", cwd=tmp_path)
    assert r.stdout == "Echo: hey\n", r.stderr
    r = run_cli(env2, "generate", "../models/fam/m1", "x", cwd=tmp_path / "models")  # a real relative path is fine
    assert r.returncode == 0
    r = run_cli(env2, "generate", "fam/../../etc", "x", cwd=tmp_path)
    assert r.returncode == 1 and "leaves the models root" in r.stderr


@pytest.mark.parametrize("args, needle", [
    (["generate", "/no/such/model", "hi"], "model path does not exist: /no/such/model"),
    (["generate", "nosuchmodel", "hi"], "'nosuchmodel' is not an existing path"),
    (["generate", "MODEL", "hi", "-o", "mirostat=1"], "'mirostat' is not supported"),
    (["generate", "MODEL", "hi", "--temperature", "-1"], "--temperature must be >= 0"),
    (["generate", "MODEL", "hi", "--device", "bad device"], "malformed device name"),
    (["generate", "MODEL", "hi", "-n", "0"], "-n/--max-tokens must be >= 1"),
    (["generate", "MODEL", "hi", "--top-p", "1.5"], "--top-p must be in (0, 1]"),
    (["generate", "MODEL", "hi", "--top-k", "-2"], "--top-k must be >= 0"),
    (["generate", "MODEL", "hi", "--seed", "-1"], "--seed must be >= 0"),
    (["generate", "MODEL", "hi", "--stop", ""], "--stop must not be an empty string"),
    (["generate", "MODEL", "hi", "-o", "num_predict=0"], "-o num_predict=0: option 'num_predict' must be >= 1"),
    (["chat", "MODEL", "--repeat-penalty", "0"], "--repeat-penalty must be > 0"),
    (["bench", "MODEL", "--runs", "0"], "--runs must be >= 1"),
    (["chat", "/no/such/dir"], "model path does not exist"),
    (["bench", "/no/such/dir"], "model path does not exist"),
])
def test_errors_are_one_line_without_traceback(env, model, tmp_path, args, needle):
    args = [str(model) if a == "MODEL" else a for a in args]
    r = run_cli(dict(env, OVGENAI_C_MODELS=str(tmp_path / "empty")), *args)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ovgenai-c: error: ") and needle in lines[0], r.stderr
    _no_traceback(r)


def test_debug_shows_the_traceback(env):
    r = run_cli(env, "--debug", "generate", "/no/such/model", "hi")
    assert r.returncode != 0 and "Traceback" in r.stderr


def test_bad_library_lists_what_was_tried_one_item_a_line(env, model, tmp_path):
    bogus = tmp_path / "libnothing.so"
    bogus.write_text("not a library")
    r = run_cli(env, "generate", str(model), "hi", "--library", str(bogus))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and lines[0].startswith("ovgenai-c: error: ") and lines[0].endswith("could not be loaded:")
    assert str(bogus) in lines[0] and lines[1].startswith(f"  - {bogus}: "), r.stderr
    assert lines[-1].startswith("  Not falling back") and ";" not in lines[0]
    _no_traceback(r)


@pytest.mark.parametrize("flags, needle", [
    (["--temperature", "-1"], "--temperature must be >= 0, got -1.0"),
    (["-n", "0"], "-n/--max-tokens must be >= 1"),
    (["--max-new-tokens", "-5"], "-n/--max-tokens must be >= 1"),
    (["--top-p", "0"], "--top-p must be in (0, 1]"),
    (["--min-p", "2"], "--min-p must be in [0, 1)"),
    (["--min-p", "1"], "--min-p must be in [0, 1), got 1.0"),  # upstream's validate(): min_p < 1
    (["--stop", "a\udcff"], "--stop item 'a\\udcff' is not valid Unicode text"),  # argv bytes b"a\xff"
    (["--top-k", "18446744073709551616"], "--top-k must be in [0, 18446744073709551615]"),  # a size_t
    (["-o", "mirostat=1"], "-o mirostat=1: option 'mirostat' is not supported"),
    (["-o", "nonsense"], "-o/--option expects KEY=VALUE"),
    (["--device", "cpu"], "--device 'cpu': malformed device name"),
])
def test_flags_are_checked_before_anything_loads(env, tmp_path, flags, needle):
    # the model path does not even exist: the flag error comes first, before the library or the model
    r = run_cli(dict(env, OVGENAI_C_LIBRARY=str(tmp_path / "no-library.so")), "generate", "/no/such/model", "hi",
                *flags)
    assert r.returncode == 1 and r.stderr.startswith("ovgenai-c: error: " + needle), r.stderr
    assert "num_predict" not in r.stderr or "-o" in flags


def test_a_missing_model_path_is_reported_before_the_library_loads(env, tmp_path):
    broken = dict(env, OVGENAI_C_LIBRARY=str(tmp_path / "no-library.so"))
    for args in (["generate", "/no/such/model", "hi"], ["chat", "./no/such"], ["bench", "~/no/such.gguf"],
                 ["generate", "such.gguf", "hi"]):  # (a bare .gguf name: neither a file here nor in the catalog)
        r = run_cli(broken, *args)
        assert r.returncode == 1 and r.stderr.strip() == f"ovgenai-c: error: model path does not exist: {args[1]}"


def test_an_unknown_device_lists_the_available_ones(env, model):
    r = run_cli(env, "generate", str(model), "hi", "--device", "NOSUCHDEV")
    assert r.returncode == 1, r.stderr
    if "available devices:" not in r.stderr:
        pytest.skip("openvino (asked for the device list in a child interpreter) is not installed")
    assert "no device 'NOSUCHDEV' here; available devices: " in r.stderr and "CPU" in r.stderr
    r = run_cli(dict(env, OVGENAI_DEVICE="AUTO:NOSUCHDEV,CPU"), "generate", str(model), "hi")
    assert r.returncode == 1 and "OVGENAI_DEVICE 'AUTO:NOSUCHDEV,CPU': no device 'NOSUCHDEV'" in r.stderr


# --- chat through piped stdin ---------------------------------------------------------------------------------
def test_chat_piped_multi_turn_reset_exit(double_lib_path, tmp_path, model):
    log = tmp_path / "inputs.jsonl"
    env = cli_env(double_lib_path, tmp_path, OVD_LOG_INPUTS=str(log))
    stdin = "hi there\nsecond question\n/reset\nthird\n/exit\nnot seen\n"
    r = subprocess.run(driver_args(double_lib_path, 0, "chat", str(model), "--system", "be nice"), env=env,
                       input=stdin, text=True, capture_output=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["Echo: hi there", "Echo: second question", "(conversation reset)",
                                     "Echo: third"]
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    sysmsg = {"role": "system", "content": "be nice"}
    assert calls == [
        [sysmsg, {"role": "user", "content": "hi there"}],
        [sysmsg, {"role": "user", "content": "hi there"}, {"role": "assistant", "content": "Echo: hi there"},
         {"role": "user", "content": "second question"}],
        [sysmsg, {"role": "user", "content": "third"}],  # /reset forgot the earlier turns
    ]


def test_chat_piped_eof_ends_cleanly(env, model):
    r = run_cli(env, "chat", str(model), "-v", input="only one\n")
    assert r.returncode == 0 and r.stdout == "Echo: only one\n"
    assert "generated" in r.stderr and "TTFT" in r.stderr


# --- chat through a pseudo-terminal ----------------------------------------------------------------------------
class Term:
    def __init__(self, argv, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # child
            try:
                # Ctrl-C must reach the CLI even when this suite runs with SIGINT ignored (nohup, CI, background)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.chdir(str(ROOT))
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.buf = b""
        self.pos = 0

    def expect(self, needle: str, timeout: float = 20) -> float:
        want = needle.encode()
        deadline = time.monotonic() + timeout
        while True:
            i = self.buf.find(want, self.pos)
            if i >= 0:
                self.pos = i + len(want)
                return time.monotonic()
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {needle!r}; output so far: {self.buf!r}")
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                continue
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                data = b""
            if not data:
                raise AssertionError(f"terminal closed while waiting for {needle!r}; output: {self.buf!r}")
            self.buf += data

    def send(self, text: str) -> None:
        """Keys as a terminal sends them: the arrows as ESC [ X, or as ESC O X while the program has the cursor keys
        in application mode (DECCKM, ESC [ ? 1 h: PyPy's pyrepl readline sets it, GNU readline does not)."""
        self._read_pending()
        if self.buf.rfind(b"\x1b[?1h") > self.buf.rfind(b"\x1b[?1l"):
            for key in "ABCD":
                text = text.replace("\x1b[" + key, "\x1bO" + key)
        os.write(self.fd, text.encode())

    def _read_pending(self) -> None:
        while select.select([self.fd], [], [], 0)[0]:
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                return
            if not data:
                return
            self.buf += data

    def __enter__(self) -> "Term":
        return self

    def __exit__(self, *exc) -> None:
        """Never leave the child behind, whatever the test did."""
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass

    def wait(self, timeout: float = 20) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            try:  # drain, so the child never blocks on a full terminal
                r, _, _ = select.select([self.fd], [], [], 0.05)
                if r:
                    self.buf += os.read(self.fd, 4096)
            except OSError:
                time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError(f"child did not exit; output: {self.buf!r}")


def test_chat_in_a_pseudo_terminal_with_ctrl_c(double_lib_path, tmp_path, model):
    env = cli_env(double_lib_path, tmp_path)
    with Term(driver_args(double_lib_path, 150_000, "chat", str(model)), env) as term:
        term.expect("/reset clears the conversation")  # the banner, on a terminal only
        term.expect(">>> ")
        term.send("one two\r")
        term.expect("Echo: one two")
        term.expect(">>> ")
        long = " ".join(f"w{i}" for i in range(40))  # ~6 s at 150 ms per token
        term.send(long + "\r")
        term.expect("Echo: w0 ")
        term.send("\x03")  # Ctrl-C: stops the answer, keeps the session
        term.expect("[stopped]")
        answer = term.buf[term.buf.rindex(b"Echo: w0 "):].split(b"[stopped]")[0]
        assert b"w39" not in answer  # stopped, not run to the end of the answer (the input echo has w39)
        term.expect(">>> ")
        term.send("after\r")
        term.expect("Echo: after")
        term.expect(">>> ")
        # Ctrl-C at the prompt: a hint, not an exit. Give input() a moment to reach its read: a SIGINT landing
        # between the prompt's write and readline's select() is only seen at the next keystroke (CPython).
        time.sleep(0.3)
        term.send("\x03")
        term.expect("use /exit or Ctrl-D to quit")
        term.send("/reset\r")
        term.expect("(conversation reset)")
        term.send("/exit\r")
        assert term.wait() == 0
    assert b"Traceback" not in term.buf
    assert b"w39" not in term.buf.split(b"Echo: w0")[-1]  # the stopped answer did not run to the end


def test_generate_ctrl_c_in_a_terminal(double_lib_path, tmp_path, model):
    env = cli_env(double_lib_path, tmp_path)
    words = " ".join(f"w{i}" for i in range(40))
    with Term(driver_args(double_lib_path, 150_000, "generate", str(model), words), env) as term:
        term.expect("Echo: ")
        term.send("\x03")
        term.expect("[stopped]", timeout=5)
        assert term.wait() == 130
    assert b"Traceback" not in term.buf


# --- doctor, models, bench --------------------------------------------------------------------------------------
def test_doctor_names_the_library_and_its_kind(env, double_lib_path):
    r = run_cli(env, "doctor")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    import platform  # (the interpreter is named: PyPy runs ovgenai_c too)
    assert out.startswith("ovgenai_c 0") and f"({platform.python_implementation()} " in out.splitlines()[0]
    assert f"path:         {double_lib_path}" in out and "kind:         other" in out
    assert "found by:     OVGENAI_C_LIBRARY" in out and "none missing" in out
    assert "vision:       VLMPipeline (the 13 vlm_pipeline.h functions are exported)" in out  # the double has them
    assert "default model:  SmolLM2-135M-Instruct" in out and env["OVGENAI_C_CACHE"] in out
    assert "openvino:" in out and ("devices: " in out or "unavailable" in out)
    r = run_cli(env, "doctor", "--json")
    doc = json.loads(r.stdout)
    assert doc["library"]["path"] == str(double_lib_path) and doc["library"]["kind"] == "other"
    assert doc["default_model"]["gguf_present"] is False
    assert doc["python_implementation"] == platform.python_implementation()


def test_doctor_shows_the_cpu_isa_and_inference_precision(env):
    doc = json.loads(run_cli(env, "doctor", "--json").stdout)
    from testsupport import cpu_flags

    flags = cpu_flags()
    cpu = doc["cpu"]
    if flags:
        assert cpu["ok"] and set(cpu["flags"]) <= flags
        assert cpu["isa"] in flags or cpu["isa"] == "below sse4_2"
        bf16 = bool(flags & {"amx_bf16", "avx512_bf16"})
        assert (cpu["isa"] in ("amx_bf16", "avx512_bf16")) == bf16
    ov = pytest.importorskip("openvino", exc_type=ImportError)
    if doc["openvino"].get("ok") and "CPU" in doc["openvino"]["devices"]:
        want = ov.Core().get_property("CPU", "INFERENCE_PRECISION_HINT").get_type_name()
        assert doc["openvino"]["cpu_inference_precision"] == want
        out = run_cli(env, "doctor").stdout
        assert f"ISA level {cpu['isa']}" in out and f"precision:    {want} (CPU plugin" in out


def test_cpu_isa_levels(tmp_path):
    from ovgenai_c.cli import _cpu_isa

    for flags, level in (("fpu sse4_2 avx avx2 fma", "avx2"), ("avx2 avx512f avx512_vnni", "avx512f"),
                         ("avx2 avx512f avx512_bf16 amx_tile amx_bf16 amx_int8", "amx_bf16"), ("fpu sse2", "below sse4_2")):
        f = tmp_path / "cpuinfo"
        f.write_text(f"processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
        got = _cpu_isa(str(f))
        assert got["ok"] and got["isa"] == level and got["model"] == "Test CPU", (flags, got)
    assert _cpu_isa(str(tmp_path / "missing"))["ok"] is False


def test_doctor_without_a_library(env, tmp_path):
    r = run_cli(dict(env, OVGENAI_C_LIBRARY=str(tmp_path / "missing.so")), "doctor")
    assert r.returncode == 1 and "library:        NOT FOUND" in r.stdout and "missing.so" in r.stdout
    _no_traceback(r)


def test_models_lists_the_catalog(env, tmp_path):
    root = tmp_path / "models"
    make_ir(root / "a")
    make_ir(root / "fam" / "b")
    (root / "fam" / "b" / "ovgenai_c.profile.json").write_text('{"max_output_tokens": 7}')
    shutil.copyfile(ROOT / "tests" / "fixtures" / "tiny" / "tiny.gguf", root / "t.gguf")
    r = run_cli(env, "models", "--root", str(root))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "FORMAT", "SIZE", "RUNS", "ON", "PROFILE"]
    assert [ln.split()[0] for ln in lines[1:4]] == ["a", "fam/b", "t.gguf"]  # none is the default: no '*'
    assert "max_output_tokens=7" in lines[2] and lines[3].split()[1] == "gguf"
    assert lines[1].split()[4] == lines[3].split()[4] == "bundled,official"  # both libraries load a GGUF too
    assert "both load IR folders and GGUF files" in r.stdout
    doc = json.loads(run_cli(env, "models", "--json", "--models-root", str(root)).stdout)
    assert [m["name"] for m in doc["models"]] == ["a", "fam/b", "t.gguf"]
    assert [m["runs_on"] for m in doc["models"]] == [["bundled", "official"]] * 3
    assert not any(m["default"] for m in doc["models"])


def test_models_marks_the_default_model(env):
    cache_models = Path(env["OVGENAI_C_CACHE"]) / "models"
    default = cache_models / "SmolLM2-135M-Instruct"
    make_ir(default / "ir")
    shutil.copyfile(ROOT / "tests" / "fixtures" / "tiny" / "tiny.gguf", default / "SmolLM2-135M-Instruct.Q4_1.gguf")
    make_ir(cache_models / "other")
    r = run_cli(env, "models")
    assert r.returncode == 0, r.stderr
    rows = {ln[2:].split()[0]: ln for ln in r.stdout.splitlines()[1:] if ln[:1] in ("*", " ")}
    assert rows["SmolLM2-135M-Instruct/ir"].startswith("* ")
    assert rows["SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf"].startswith("* ")
    assert rows["other"].startswith("  ")
    assert "(* the default model, used when MODEL is omitted" in r.stdout


def test_bench_reports_metrics(env, model):
    r = run_cli(env, "bench", str(model), "--runs", "2", "--warmup", "0", "--json", "--prompt", "a b c")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["runs"] == 2 and len(doc["per_run"]) == 2
    assert doc["load_time_ms"] > 0 and doc["ttft_ms"]["mean"] > 0 and doc["tpot_ms"]["mean"] > 0
    assert doc["throughput_tps"]["mean"] > 0 and doc["peak_rss_mib"] > 10
    r = run_cli(env, "bench", str(model), "--runs", "1")
    for label in ("load time:", "TTFT:", "TPOT:", "throughput:", "peak RSS:"):
        assert label in r.stdout


def test_bench_ignores_eos_unless_told(env, model):
    r = run_cli(env, "bench", str(model), "-n", "12", "--runs", "1", "--warmup", "0", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["ignore_eos"] is True, r.stderr
    r = run_cli(env, "bench", str(model), "-n", "12", "--runs", "1", "--warmup", "0", "--json", "--stop-at-eos")
    assert r.returncode == 0 and json.loads(r.stdout)["ignore_eos"] is False, r.stderr


# --- the real tiny model on the bundled backend ---------------------------------------------------------------
def _bundled() -> Path:
    from testsupport import bundled_library_path

    p = bundled_library_path()
    if p is not None and p.is_file():
        return p
    pytest.skip("the bundled backend is not built (ovgenai_c/_bundled/ or native/build/libovgenai_c_bundled.so)")


def test_real_tiny_model_on_the_bundled_backend(tmp_path):
    lib = _bundled()
    env = cli_env(lib, tmp_path)
    tiny = ROOT / "tests" / "fixtures" / "tiny" / "ir"
    r = run_cli(env, "generate", str(tiny), "Hello", "-n", "5", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["library_kind"] == "bundled" and doc["usage"]["completion_tokens"] == 5
    assert doc["finish_reason"] == "length" and doc["text"]
    r = run_cli(env, "chat", str(tiny), "-n", "3", input="Hi\nAgain\n/exit\n", timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) >= 2


def test_doctor_asks_the_openvino_the_library_runs_on(tmp_path):
    """doctor's devices and version come through the loaded library's own libopenvino_c (an official archive runs
    on its own OpenVINO, not the wheel's): the version is the one library_info() reads from the mapped libopenvino,
    and the libopenvino_c asked is the one beside it."""
    lib = _bundled()
    doc = json.loads(run_cli(cli_env(lib, tmp_path), "doctor", "--json", timeout=120).stdout)
    info, ov = doc["library"], doc["openvino"]
    assert info["ok"] and ov["ok"], doc
    assert ov["version"] == info["openvino_version"]
    assert Path(ov["through"]).name.startswith("libopenvino_c.so")
    assert Path(ov["through"]).resolve().parent == Path(info["libopenvino_path"]).resolve().parent
    assert "CPU" in ov["devices"]
    out = run_cli(cli_env(lib, tmp_path), "doctor", timeout=120).stdout
    assert f"openvino:       ok, {info['openvino_version']}" in out and f"through:      {ov['through']}" in out


def test_bench_generates_the_tokens_asked_for_on_the_bundled_backend(tmp_path):
    # ignore_eos: TPOT rests on N tokens, not on where the answer ends (SmolLM2's answer to the default prompt,
    # "The capital of France is Paris.", ends after 8 tokens)
    from ovgenai_c import models

    smol = models.default_model_dir() / "ir"
    if not models.default_model_status()["ir_present"]:
        pytest.skip("the default model (SmolLM2 IR) is not fetched yet")
    env = cli_env(_bundled(), tmp_path)
    args = ("bench", str(smol), "-n", "24", "--runs", "1", "--warmup", "0", "--json")
    r = run_cli(env, *args, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["per_run"][0]["generated_tokens"] == 24
    r = run_cli(env, *args, "--stop-at-eos", timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["per_run"][0]["generated_tokens"] < 24


def _no_openvino_genai(env, tmp_path):
    """``env`` with an ``openvino_genai`` package first on PYTHONPATH that refuses to be imported (checked)."""
    shadow = tmp_path / "shadow" / "openvino_genai"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('openvino_genai is not installed here (test)')\n")
    env = dict(env, PYTHONPATH=os.pathsep.join([str(shadow.parent), env["PYTHONPATH"]]))
    probe = subprocess.run([sys.executable, "-c", "import openvino_genai"], env=env, capture_output=True, text=True,
                           timeout=60)
    assert probe.returncode != 0 and "openvino_genai is not installed here (test)" in probe.stderr
    return env


def test_convert_a_gguf_to_ir_without_openvino_genai(env, tmp_path):
    # the bundled backend converts (python -m ovgenai_c.gguf_ir in a child): openvino_genai is not needed, and the
    # weights are the ones GenAI writes for the same GGUF (tests/fixtures/tiny/ir was made by GenAI)
    _bundled()
    env = _no_openvino_genai(env, tmp_path)
    gguf = tmp_path / "tiny.gguf"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "tiny" / "tiny.gguf", gguf)
    r = run_cli(env, "convert", str(gguf), str(tmp_path / "out"), timeout=180)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "out")
    assert "with the bundled backend" in r.stderr  # the progress line
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["openvino_detokenizer.bin", "openvino_detokenizer.xml", "openvino_model.bin",
                     "openvino_model.xml", "openvino_tokenizer.bin", "openvino_tokenizer.xml"]
    for name in ("openvino_model.bin", "openvino_tokenizer.bin", "openvino_detokenizer.bin"):
        assert (tmp_path / "out" / name).read_bytes() == (ROOT / "tests" / "fixtures" / "tiny" / "ir" / name
                                                          ).read_bytes(), name
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".convert-")]  # its scratch folder is gone
    from ovgenai_c.provider import model_info

    assert "<|im_start|>" in model_info(tmp_path / "out").chat_template
    r = run_cli(env, "convert", str(gguf), str(tmp_path / "out"))
    assert r.returncode == 1 and "exists and is not empty" in r.stderr
    r = run_cli(env, "convert", str(tmp_path / "nope.gguf"))
    assert r.returncode == 1 and "not a .gguf file" in r.stderr
    # a file that only says it is a GGUF: the converter's reason, one line, and no output folder
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00")
    r = run_cli(env, "convert", str(bad), str(tmp_path / "bad-ir"))
    assert r.returncode == 1 and "is not a GGUF file" in r.stderr and "failed (exit 1)" in r.stderr, r.stderr
    assert not (tmp_path / "bad-ir").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".convert-")]
    _no_traceback(r)


def test_generate_on_a_gguf_file_with_the_bundled_backend(tmp_path):
    # the bundled backend loads the GGUF itself: the answer of the IR folder GenAI made from it (greedy, under the
    # f32 precision hint of both models' profiles, briefly: the IR holds the weights f16-compressed, so long answers
    # part after ~26 tokens, as GenAI's own GGUF and IR answers do)
    env = cli_env(_bundled(), tmp_path)
    fixtures = ROOT / "tests" / "fixtures" / "tiny"
    models_dir = tmp_path / "models"
    shutil.copytree(fixtures / "ir", models_dir / "tiny")
    shutil.copyfile(fixtures / "tiny.gguf", models_dir / "tiny.gguf")
    f32 = json.dumps({"properties": {"INFERENCE_PRECISION_HINT": "f32"}})
    (models_dir / "tiny" / "ovgenai_c.profile.json").write_text(f32)
    (models_dir / "tiny.ovgenai_c.profile.json").write_text(f32)
    docs = {}
    for name in ("tiny", "tiny.gguf"):
        r = run_cli(env, "generate", str(models_dir / name), "Hello", "-n", "8", "--temperature", "0", "--json",
                    timeout=180)
        assert r.returncode == 0, r.stderr
        docs[name] = json.loads(r.stdout)
    got, want = docs["tiny.gguf"], docs["tiny"]
    assert got["library_kind"] == "bundled" and got["model"] == str(models_dir / "tiny.gguf")
    assert got["text"] and got["text"] == want["text"] and got["finish_reason"] == "length"
    assert got["usage"] == want["usage"] and got["usage"]["completion_tokens"] == 8
    # by catalog name too, and streamed (the plain output is the same text)
    r = run_cli(env, "generate", "tiny.gguf", "Hello", "-n", "8", "--temperature", "0", "--models-root",
                str(models_dir), timeout=180)
    assert r.returncode == 0 and r.stdout == want["text"] + "\n", r.stderr


def test_generate_with_a_draft_model(tmp_path, env):
    # speculative decoding on the bundled backend: the greedy answer of the model alone (f32 profile on both), the
    # drafts counted in --json's perf and -v's line; a bad draft names --draft-model; another library refuses it
    benv = cli_env(_bundled(), tmp_path)
    tiny = tmp_path / "tiny"
    shutil.copytree(ROOT / "tests" / "fixtures" / "tiny" / "ir", tiny)
    (tiny / "ovgenai_c.profile.json").write_text(json.dumps({"properties": {"INFERENCE_PRECISION_HINT": "f32"}}))
    docs = []
    for extra in ([], ["--draft-model", str(tiny)]):
        r = run_cli(benv, "generate", str(tiny), "Hello", "-n", "12", "--temperature", "0", "--json", "--no-server",
                    *extra, timeout=180)
        assert r.returncode == 0, r.stderr
        docs.append(json.loads(r.stdout))
    plain, drafted = docs
    assert drafted["text"] == plain["text"] and drafted["usage"] == plain["usage"]
    assert "draft_tokens" not in plain["perf"]
    assert drafted["perf"]["accepted_draft_tokens"] == drafted["perf"]["draft_tokens"] > 0  # its own draft
    r = run_cli(benv, "generate", str(tiny), "Hello", "-n", "6", "--no-server", "-v", "--draft-model", str(tiny),
                timeout=180)
    assert r.returncode == 0 and "drafts accepted " in r.stderr, r.stderr
    for bad, says in ((tmp_path / "missing", "--draft-model: model path does not exist"),
                      (ROOT / "README.md", "--draft-model: .*README.md is a file")):
        r = run_cli(benv, "generate", str(tiny), "Hello", "-n", "2", "--no-server", "--draft-model", str(bad))
        assert r.returncode != 0 and re.search(says, r.stderr), r.stderr
        _no_traceback(r)
    r = run_cli(env, "generate", str(tiny), "Hello", "--no-server", "--draft-model", str(tiny))
    assert r.returncode != 0 and "--draft-model: speculative decoding runs on the bundled backend" in r.stderr
    _no_traceback(r)


def test_serve_gives_the_draft_model_to_the_default_model_only(tmp_path):
    from ovgenai_c import cli, load_library
    from ovgenai_c.provider.batching import can_batch

    lib = load_library(str(_bundled()))
    tiny = ROOT / "tests" / "fixtures" / "tiny" / "ir"
    other = tmp_path / "other"
    shutil.copytree(tiny, other)
    args = cli.build_parser().parse_args(["serve", str(tiny), "--draft-model", str(tiny)])
    factory = cli.factory_for(args, lib, str(tiny))
    default, second = factory(tiny, 0), factory(other, 0)
    assert repr(default.properties["draft_model"]).startswith(f"DraftModel({str(tiny)!r}")
    assert "draft_model" not in second.properties
    assert not can_batch(default) and can_batch(second)  # speculative decoding runs on LLMPipeline, not batched
    with pytest.raises(cli.CliError, match="--draft-model: speculative decoding runs on the bundled backend"):
        cli.draft_properties(args, "official")


def test_generate_prompt_from_stdin(env, model):
    r = run_cli(env, "generate", str(model), "-", input="from stdin\n")
    assert r.returncode == 0 and r.stdout == "Echo: from stdin\n"


def test_chat_survives_a_failed_turn(double_lib_path, tmp_path, model):
    env = cli_env(double_lib_path, tmp_path, OVD_FAIL="ov_genai_llm_pipeline_generate_with_history:-1:1")
    r = subprocess.run(driver_args(double_lib_path, 0, "chat", str(model)), env=env,
                       input="first\nsecond\n/reset\n/exit\n", text=True, capture_output=True, timeout=60,
                       cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "Echo: first" and "(conversation reset)" in r.stdout
    errs = [ln for ln in r.stderr.splitlines() if ln.startswith("ovgenai-c: error:")]
    assert len(errs) == 1 and "GENERAL_ERROR" in errs[0]
    _no_traceback(r)


def test_chat_refuses_a_model_without_template(env, tmp_path):
    m = make_ir(tmp_path / "plain", template=None)
    r = run_cli(env, "chat", str(m), input="hi\n")
    assert r.returncode == 1 and "has no chat template" in r.stderr and "generate" in r.stderr
    r = run_cli(env, "generate", str(m), "hi")
    assert r.returncode == 0 and r.stdout == "Echo: hi\n"


def test_model_omitted_uses_the_default_model(double_lib_path, tmp_path, model):
    env = cli_env(double_lib_path, tmp_path, OVD_DEFAULT_MODEL=str(model))
    r = subprocess.run(driver_args(double_lib_path, 0, "generate", "What is the capital of France?"), env=env,
                       text=True, capture_output=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Echo: What is the capital of France?\n"
    assert Path(str(model) + ".asked").read_text() == "ir\n"  # not the official library: the IR form


def test_bench_compare_hands_off_to_the_side_by_side_benchmark():
    r = subprocess.run([sys.executable, "-m", "ovgenai_c", "bench", "--compare", "--help"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0
    assert "--quick" in r.stdout and "--prompt-lens" in r.stdout


# --- chat: line editing, history, multi-line input, /set, /show --------------------------------------------------
def test_chat_terminal_editing_history_multiline_set_and_show(double_lib_path, tmp_path, model):
    log = tmp_path / "inputs.jsonl"
    env = cli_env(double_lib_path, tmp_path, OVD_LOG_INPUTS=str(log), TERM="xterm")
    with Term(driver_args(double_lib_path, 0, "chat", str(model), "-v"), env) as term:
        term.expect(f"Loading {model} on CPU")  # at once, before the load
        term.expect("/help for more")
        term.expect(">>> ")
        term.send("abc\x1b[D\x1b[DX\r")  # two Left arrows, then an insert: readline edits the line
        term.expect("Echo: aXbc")
        term.expect(">>> ")
        term.send('"""\r')
        term.expect("... ")
        term.send("line one\r")
        term.expect("... ")
        term.send('line two"""\r')
        term.expect("Echo: line one")
        term.expect(">>> ")
        term.send("/set num_predict 2\r")
        term.expect("(set num_predict = 2)")
        term.send("/set system be brief\r")
        term.expect("(system message set)")
        term.send("/set temperature -1\r")
        term.expect("(not set: option 'temperature' must be >= 0")
        term.send("/show\r")
        term.expect("system:       be brief")
        term.expect("num_predict=2")
        term.send("/reset\r")
        term.expect("(conversation reset)")
        term.send("w1 w2 w3 w4 w5\r")
        term.expect("2 generated")
        term.expect(">>> ")
        term.send("/exit\r")
        assert term.wait() == 0
    assert b"Traceback" not in term.buf
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    assert calls[0] == "Hi"  # the warm-up (a plain 2-token prompt), done before the first answer
    chats = [c for c in calls if isinstance(c, list)]
    assert chats[0] == [{"role": "user", "content": "aXbc"}]  # the edited line, no escape sequence
    assert chats[1][-1] == {"role": "user", "content": "line one\nline two"}  # the block, as one message
    assert chats[2] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "w1 w2 w3 w4 w5"}]
    history = (Path(env["OVGENAI_C_CACHE"]) / "chat_history").read_text()
    assert "aXbc" in history and "/set num_predict 2" in history and "\x1b" not in history


def test_chat_history_is_recalled_in_the_next_session(double_lib_path, tmp_path, model):
    env = cli_env(double_lib_path, tmp_path, TERM="xterm")
    hist = Path(env["OVGENAI_C_CACHE"]) / "chat_history"
    hist.parent.mkdir(parents=True, exist_ok=True)
    hist.write_text("from last time\n")
    with Term(driver_args(double_lib_path, 0, "chat", str(model)), env) as term:
        term.expect(">>> ")
        term.send("\x1b[A\r")  # Up arrow: the last line of the earlier session
        term.expect("Echo: from last time")
        term.expect(">>> ")
        term.send("/exit\r")
        assert term.wait() == 0


def test_chat_piped_multiline_and_set(double_lib_path, tmp_path, model):
    log = tmp_path / "inputs.jsonl"
    env = cli_env(double_lib_path, tmp_path, OVD_LOG_INPUTS=str(log))
    stdin = '"""\nfirst line\n\nthird line\n"""\n/set system terse\n/set parameter top_k 5\n/show\nnext\n/exit\n'
    r = subprocess.run(driver_args(double_lib_path, 0, "chat", str(model)), env=env, input=stdin, text=True,
                       capture_output=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    assert "Loading" not in r.stderr  # piped: no terminal chatter, and no warm-up request
    assert "options:      top_k=5" in r.stdout and "system:       terse" in r.stdout
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    assert all(isinstance(c, list) for c in calls)  # no warm-up when piped
    assert calls[0] == [{"role": "user", "content": "first line\n\nthird line"}]
    assert calls[1][0] == {"role": "system", "content": "terse"} and calls[1][-1]["content"] == "next"
    assert not (Path(env["OVGENAI_C_CACHE"]) / "chat_history").exists()  # history only on a terminal


# --- warm starts: the compiled-model cache ------------------------------------------------------------------------
def test_the_cli_passes_the_compiled_model_cache(double_lib_path, tmp_path, model):
    created = tmp_path / "created.jsonl"
    env = cli_env(double_lib_path, tmp_path, OVD_LOG_CREATE=str(created))
    r = subprocess.run(driver_args(double_lib_path, 0, "generate", str(model), "hi"), env=env, text=True,
                       capture_output=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    r = subprocess.run(driver_args(double_lib_path, 0, "generate", str(model), "hi", "--no-cache"), env=env,
                       text=True, capture_output=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    (on, off) = [json.loads(x) for x in created.read_text().splitlines()]
    assert on["properties"] == {"CACHE_DIR": str(Path(env["OVGENAI_C_CACHE"]) / "compiled"),
                                "ATTENTION_BACKEND": "SDPA"}
    assert off["properties"] == {}
    # a profile's own properties win over the command line's
    (model / "ovgenai_c.profile.json").write_text('{"properties": {"ATTENTION_BACKEND": "PA"}}')
    r = subprocess.run(driver_args(double_lib_path, 0, "generate", str(model), "hi"), env=env, text=True,
                       capture_output=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    last = json.loads(created.read_text().splitlines()[-1])
    assert last["properties"]["ATTENTION_BACKEND"] == "PA" and "CACHE_DIR" in last["properties"]


def test_compiled_blob_written_once_then_reused_on_the_bundled_backend(tmp_path):
    lib = _bundled()
    blobs = tmp_path / "blobs"
    env = cli_env(lib, tmp_path, OVGENAI_C_COMPILED_CACHE=str(blobs))
    tiny = ROOT / "tests" / "fixtures" / "tiny" / "ir"
    r = run_cli(env, "generate", str(tiny), "Hello", "-n", "3", timeout=180)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr
    (blob,) = blobs.glob("*.blob")  # the first run compiled and stored the model
    before = blob.stat()
    r2 = run_cli(env, "generate", str(tiny), "Hello", "-n", "3", timeout=180)
    assert r2.returncode == 0 and r2.stdout == r.stdout, r2.stderr
    after = blob.stat()
    # a cache hit reads the blob; a miss (an import OpenVINO refused) deletes and rewrites it
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert [p.name for p in blobs.iterdir()] == [blob.name]
    shutil.rmtree(blobs)
    r3 = run_cli(env, "generate", str(tiny), "Hello", "-n", "3", "--no-cache", timeout=180)
    assert r3.returncode == 0 and r3.stdout == r.stdout and not blobs.exists()


# --- help and doctor wording -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [[], ["chat"], ["generate"], ["bench"], ["doctor"], ["models"], ["convert"]])
def test_help_shows_examples(command):
    r = subprocess.run([sys.executable, "-m", "ovgenai_c", *command, "--help"], capture_output=True, text=True,
                       timeout=60, cwd=str(ROOT))
    assert r.returncode == 0
    examples = r.stdout.split("examples:\n", 1)[1]
    assert all(ln.startswith("  ovgenai-c ") for ln in examples.splitlines()[:2]), r.stdout


def test_doctor_phrases_optional_places_as_notes(env, double_lib_path):
    from ovgenai_c.cli import _tried_before

    assert _tried_before("fetched archive: /x/libopenvino_genai_c.so: no such file") == \
        "fetched archive not installed (optional; would be /x/libopenvino_genai_c.so)"
    r = run_cli(env, "doctor")
    assert "tried first" not in r.stdout and "no such file" not in r.stdout


def test_generate_ends_at_the_context_window_by_default(env, model):
    (model / "config.json").write_text('{"max_position_embeddings": 4}')
    r = run_cli(env, "generate", str(model), "w1 w2 w3 w4 w5 w6 w7 w8", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # the double echoes one word per token: without a cap it would say all eight
    assert doc["usage"]["completion_tokens"] == 4 and doc["finish_reason"] == "length"
    r = run_cli(env, "generate", str(model), "w1 w2 w3 w4 w5 w6 w7 w8", "--json", "-n", "6")
    assert json.loads(r.stdout)["usage"]["completion_tokens"] == 6  # -n still wins
