"""Shared fixtures of the Whisper tests.

- ``whisper_real_ir``: whisper-tiny.en (English only) as OpenVINO IR, fetched and converted once
  (:mod:`ovgenai_c.whisper_models`); skips saying why when it cannot be fetched or converted.
- ``whisper_multilingual_ir``: whisper-base (99 languages), the same way.
- ``whisper_tiny_ir`` / ``whisper_tiny_multilingual_ir``: random-weights 2+2-layer Whisper models
  (``scripts/make_tiny_whisper.py``) with the real tiny.en / base vocabulary, made once into the cache; greedy
  decoding never ends on its own there, so bound it with ``max_new_tokens``.
- ``speech_samples``: the fixed test sentences spoken by espeak-ng (16 kHz mono WAV, cached;
  :class:`whisper_support.SpeechSamples`); skips naming espeak-ng when it is absent.

The models and speech live under ``ovgenai_c.models.cache_root()`` (``OVGENAI_C_CACHE``).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

MAKE_TINY = ROOT / "scripts" / "make_tiny_whisper.py"
# the sources a tiny model is made from: when one changes, the cached model is made again
_TINY_INPUTS = (MAKE_TINY, ROOT / "ovgenai_c_tools" / "ct2_model.py", ROOT / "ovgenai_c_tools" / "whisper_ir.py",
                ROOT / "ovgenai_c_tools" / "convert_whisper_ct2.py")


def _real_model(name: str) -> Path:
    from ovgenai_c.models import ModelFetchError
    from ovgenai_c.whisper_models import ensure_whisper_model

    try:
        return ensure_whisper_model(name, progress=False)
    except ModelFetchError as exc:
        pytest.skip(f"the Whisper model {name} cannot be fetched or converted: {exc}")


@pytest.fixture(scope="session")
def whisper_real_ir() -> Path:
    """whisper-tiny.en as an OpenVINO IR folder."""
    return _real_model("whisper-tiny.en")


@pytest.fixture(scope="session")
def whisper_multilingual_ir() -> Path:
    """whisper-base (multilingual) as an OpenVINO IR folder."""
    return _real_model("whisper-base")


def _tiny_model(vocab_from: Path, name: str) -> Path:
    from ovgenai_c import models

    digest = hashlib.sha256()
    for p in _TINY_INPUTS:
        digest.update(p.read_bytes())
    for f in ("tokenizer.json", "generation_config.json"):
        digest.update((vocab_from / f).read_bytes())
    key = digest.hexdigest()
    folder = models.cache_root() / "test-fixtures" / name
    marker = folder / "made.json"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with models.locked(folder.parent / f".{name}.lock"):
        made = models.read_json_or_none(marker)
        if made and made.get("inputs_sha256") == key and (folder / "ir" / "openvino_decoder_model.xml").is_file():
            return folder / "ir"
        shutil.rmtree(folder, ignore_errors=True)
        r = subprocess.run([sys.executable, str(MAKE_TINY), str(vocab_from), str(folder)], cwd=str(ROOT),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        if r.returncode != 0:
            pytest.fail(f"make_tiny_whisper.py failed (exit {r.returncode}):\n{r.stderr.decode()[-2000:]}")
        marker.write_text(json.dumps({"inputs_sha256": key, "vocab_from": str(vocab_from)}) + "\n")
    return folder / "ir"


@pytest.fixture(scope="session")
def whisper_tiny_ir(whisper_real_ir) -> Path:
    """A random-weights tiny Whisper with tiny.en's (English-only) vocabulary, as an OpenVINO IR folder."""
    return _tiny_model(whisper_real_ir, "whisper-tiny-random.en")


@pytest.fixture(scope="session")
def whisper_tiny_multilingual_ir(whisper_multilingual_ir) -> Path:
    """A random-weights tiny Whisper with base's multilingual vocabulary, as an OpenVINO IR folder."""
    return _tiny_model(whisper_multilingual_ir, "whisper-tiny-random")


@pytest.fixture(scope="session")
def speech_samples():
    """The test sentences spoken by espeak-ng: ``.english`` (12) and ``.foreign`` (de, fr, es)."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng): no synthesized speech to test on")
    from ovgenai_c import models
    from whisper_support import speech_samples as make

    return make(models.cache_root() / "test-fixtures" / "speech")
