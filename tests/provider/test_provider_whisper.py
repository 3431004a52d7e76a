"""The provider on a Whisper folder: capabilities say transcribe (and nothing else), transcribe() reaches
WhisperPipeline with its options, refusals name the reason (an LLM method on a speech model, a library without
whisper_pipeline.h), and close() frees the pipeline."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ovgenai_c import errors
from ovgenai_c.provider import CapabilityNotSupportedError, Provider, is_whisper_folder

from abi_double.controls import make_whisper_dir


@pytest.fixture
def whisper_dir(tmp_path):
    return make_whisper_dir(tmp_path / "whisper")


def test_capabilities_of_a_whisper_folder(double, whisper_dir, model):
    assert is_whisper_folder(whisper_dir) and not is_whisper_folder(model)
    p = Provider(whisper_dir, library=double.library)
    caps = p.capabilities
    assert caps.transcribe and not (caps.chat or caps.prompt or caps.stream or caps.tools or caps.vision)
    assert caps.to_dict()["transcribe"] is True
    assert Provider(model, library=double.library).capabilities.transcribe is False


def test_transcribe_passes_its_options(double, whisper_dir):
    with Provider(whisper_dir, library=double.library, properties={"ATTENTION_BACKEND": "SDPA"}) as p:
        x = np.zeros(32000, np.float32)
        r = p.transcribe(x, language="de", task="translate", timestamps=True, prompt="Hallo")
        assert r.text == " translate de 32000 samples sum 0.0000 peak 0.0000 prompt Hallo"
        assert r.segments == [{"start": 0.0, "end": 2.0, "text": " window 0 32000 samples"}]
        assert (r.language, r.task, r.duration) == ("de", "translate", 2.0)
        assert r.to_dict()["perf"]["num_generated_tokens"] == len(r.text.split())
        assert p.transcribe(x).segments is None
        assert "ATTENTION_BACKEND" not in double.properties()  # an LLM property, not passed to Whisper
    assert double.live() == 0  # close() freed the pipeline


def test_bad_transcribe_arguments(double, whisper_dir):
    with Provider(whisper_dir, library=double.library) as p:
        with pytest.raises(errors.InvalidParameterError, match="task"):
            p.transcribe(np.zeros(1000, np.float32), task="summarise")
        with pytest.raises(errors.InvalidParameterError, match="timestamps"):
            p.transcribe(np.zeros(1000, np.float32), timestamps="yes")
        with pytest.raises(errors.InvalidParameterError, match="audio"):
            p.transcribe(np.zeros((2, 2), np.float32))


def test_llm_methods_on_a_speech_model_are_refused(double, whisper_dir):
    p = Provider(whisper_dir, library=double.library)
    for call in (lambda: p.prompt("hi"), lambda: p.chat([{"role": "user", "content": "hi"}]),
                 lambda: p.stream("hi")):
        with pytest.raises(CapabilityNotSupportedError, match="Whisper .*use transcribe"):
            call()


def test_transcribe_on_an_llm_is_refused(double, model):
    with pytest.raises(CapabilityNotSupportedError, match="not a Whisper model folder"):
        Provider(model, library=double.library).transcribe(np.zeros(1000, np.float32))


def test_a_library_without_whisper_is_refused_clearly(double, whisper_dir):
    lib = dataclasses.replace(double.library, extras=frozenset(
        n for n in double.library.extras if not n.startswith("ov_genai_whisper_")))
    p = Provider(whisper_dir, library=lib)
    assert p.capabilities.transcribe is False
    with pytest.raises(CapabilityNotSupportedError, match="has no Whisper support") as info:
        p.transcribe(np.zeros(1000, np.float32))
    assert info.value.capability == "transcribe"


def test_the_catalog_lists_whisper_folders(double, tmp_path):
    from ovgenai_c.provider import Catalog, model_info

    make_whisper_dir(tmp_path / "root" / "whisper-tiny" / "ir")
    cat = Catalog(tmp_path / "root")
    assert [(e.name, e.format) for e in cat.list()] == [("whisper-tiny/ir", "whisper")]
    assert cat.resolve("whisper-tiny").format == "whisper"
    assert model_info(tmp_path / "root" / "whisper-tiny" / "ir").format == "whisper"
