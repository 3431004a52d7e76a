"""``ovgenai-c transcribe`` in subprocesses against the ABI double (its fake transcription names the task, the
language, the sample count and sum): flags reach the pipeline, output forms, and clear one-line refusals."""
from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import pytest

from cli_helpers import run_cli

from abi_double.controls import make_whisper_dir


@pytest.fixture
def whisper(tmp_path) -> Path:
    return make_whisper_dir(tmp_path / "whisper")


@pytest.fixture
def wav(tmp_path) -> Path:
    path = tmp_path / "speech.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.zeros(16000 * 3, np.int16).tobytes())
    return path


def test_transcribe_prints_the_text(env, whisper, wav):
    r = run_cli(env, "transcribe", str(wav), "--model", str(whisper))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "transcribe auto 48000 samples sum 0.0000 peak 0.0000\n"


def test_language_task_prompt_and_timestamps(env, whisper, wav):
    r = run_cli(env, "transcribe", str(wav), "--model", str(whisper), "--language", "de", "--task", "translate",
                "--prompt", "Hallo", "--timestamps")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[00:00.000 --> 00:03.000] window 0 48000 samples\n"


def test_json(env, whisper, wav):
    r = run_cli(env, "transcribe", str(wav), "--model", str(whisper), "--json", "--language", "fr", "--timestamps")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["text"] == " transcribe fr 48000 samples sum 0.0000 peak 0.0000"
    assert doc["segments"] == [{"start": 0.0, "end": 3.0, "text": " window 0 48000 samples"}]
    assert (doc["language"], doc["duration"], doc["task"], doc["library_kind"]) == ("fr", 3.0, "transcribe", "other")
    assert doc["perf"]["load_time_ms"] == 12.5


@pytest.mark.parametrize("extra, needle", [
    (["--language", "xx"], "'language' xx must be provided in 'lang_to_id' map"),
    (["--task", "summarise"], "invalid choice"),
])
def test_bad_flags(env, whisper, wav, extra, needle):
    r = run_cli(env, "transcribe", str(wav), "--model", str(whisper), *extra)
    assert r.returncode != 0 and needle in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_inputs_are_one_line_errors(env, whisper, wav, model, tmp_path):
    r = run_cli(env, "transcribe", str(tmp_path / "none.wav"), "--model", str(whisper))
    assert r.returncode == 1 and "no such audio file" in r.stderr
    r = run_cli(env, "transcribe", str(wav), "--model", str(tmp_path / "no-model"))
    assert r.returncode == 1 and "model path does not exist" in r.stderr
    r = run_cli(env, "transcribe", str(wav), "--model", str(model))  # an LLM folder
    assert r.returncode == 1 and "not a Whisper model folder" in r.stderr
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"RIFF junk")
    r = run_cli(env, "transcribe", str(junk), "--model", str(whisper))
    assert r.returncode == 1 and "not a WAV file" in r.stderr
    assert "Traceback" not in r.stderr
