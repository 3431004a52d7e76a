"""What running WhisperPipeline on a real official GenAI 2026.3.0.0 C library showed, kept in CI without it (the ABI
double stands in for the library, declared official of a release where needed):

- a tokenizer IR converted by openvino_tokenizers >= 2026.4 (a Truncate whose max length is not a Constant) makes
  GenAI <= 2026.3 die with SIGSEGV in its tokenizer setup; the binding refuses such a folder before C, by name;
- GenAI 2026.3 validates ``language`` as given (a plain "de" fails; the C ABI drops the message), later releases
  wrap it: the binding sends the lang_to_id key ("<|de|>") to C, so plain codes work on every release.
(The comparison with openvino_genai 2026.3 itself is tests/binding/test_conformance.py's Whisper section.)"""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import ovgenai_c
from ovgenai_c import errors
from ovgenai_c._capi import whisper_pipeline as capi_whisper
from ovgenai_c.tokenizer_ir_compat import FIXED_IN, converter_version, crash_reason, unchecked_truncates
from ovgenai_c.whisper_config import WhisperGenerationConfig

from abi_double.controls import make_whisper_dir

TINY_IR = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "ir"
TONE = (0.5 * np.sin(np.arange(16000 * 2) / 7.0)).astype(np.float32)


def tokenizer_xml(max_length_from: str, num_inputs: int = 1, version: str = "2026.4.1.0-738-9bfda529607") -> str:
    """A tokenizer IR skeleton as openvino_tokenizers writes it: token ids -> Truncate (3 * num_inputs ragged inputs,
    then max length, then two mode constants) -> CombineSegments; the max length from a ``Const`` or a ``Select``."""
    n = 3 * num_inputs
    layers = ['<layer id="0" name="Tokens" type="Parameter" version="opset1"><output><port id="0"/></output></layer>',
              '<layer id="1" name="Mode" type="Const" version="opset1"><output><port id="0"/></output></layer>',
              f'<layer id="2" name="MaxLength" type="{max_length_from}" version="opset1"><output><port id="0"/>'
              '</output></layer>',
              f'<layer id="3" name="Truncate_1" type="Truncate" version="extension"><data m_num_inputs="{num_inputs}"/>'
              '<input>' + "".join(f'<port id="{i}"/>' for i in range(n + 3)) + '</input>'
              '<output>' + "".join(f'<port id="{n + 3 + i}"/>' for i in range(n)) + '</output></layer>',
              '<layer id="4" name="CombineSegments_1" type="CombineSegments" version="extension"><input>'
              + "".join(f'<port id="{i}"/>' for i in range(n)) + '</input></layer>']
    edges = [f'<edge from-layer="0" from-port="0" to-layer="3" to-port="{i}"/>' for i in range(n)]
    edges += [f'<edge from-layer="2" from-port="0" to-layer="3" to-port="{n}"/>',
              f'<edge from-layer="1" from-port="0" to-layer="3" to-port="{n + 1}"/>',
              f'<edge from-layer="1" from-port="0" to-layer="3" to-port="{n + 2}"/>']
    edges += [f'<edge from-layer="3" from-port="{n + 3 + i}" to-layer="4" to-port="{i}"/>' for i in range(n)]
    return (f'<?xml version="1.0"?>\n<net name="tokenizer" version="11"><layers>{"".join(layers)}</layers>'
            f'<edges>{"".join(edges)}</edges><rt_info><openvino_tokenizers_version value="{version}"/></rt_info></net>')


def official(lib, archive: str):
    """``lib`` (the double) as an official library of the release ``archive`` says."""
    return dataclasses.replace(lib, kind="official", versions={**lib.versions, "archive": archive})


def test_a_truncate_with_a_non_constant_max_length_is_found(tmp_path):
    for kind, n, found in (("Select", 1, True), ("Const", 1, False), ("ReadValue", 2, True), ("Const", 2, False)):
        path = tmp_path / f"{kind}{n}.xml"
        path.write_text(tokenizer_xml(kind, n))
        assert bool(unchecked_truncates(path)) is found, (kind, n)
        assert converter_version(path) == "2026.4.1.0-738-9bfda529607"
    assert unchecked_truncates(tmp_path / "missing.xml") == []
    (tmp_path / "bad.xml").write_text("<net><layers>")
    assert unchecked_truncates(tmp_path / "bad.xml") == []  # (GenAI reports an unreadable IR itself)
    assert unchecked_truncates(TINY_IR / "openvino_tokenizer.xml") == []


def test_only_official_libraries_older_than_the_fix_are_concerned(tmp_path):
    (tmp_path / "openvino_tokenizer.xml").write_text(tokenizer_xml("Select"))
    lib = SimpleNamespace(kind="official", versions={"archive": "2026.3.0.0"}, openvino_version="2026.3.0-1", path="x")
    why = crash_reason(tmp_path, lib)
    assert why and "MakePaddingSatateful" in why and "2026.4.1.0-738" in why and "GenAI 2026.3" in why
    assert crash_reason(tmp_path, SimpleNamespace(kind="official", versions={}, openvino_version="2026.2.1-9")) \
        and FIXED_IN == (2026, 4)
    for fine in (SimpleNamespace(kind="official", versions={"archive": "2026.4.0.0"}, openvino_version=None),
                 SimpleNamespace(kind="official", versions={}, openvino_version="2026.4.1-22982"),
                 SimpleNamespace(kind="official", versions={}, openvino_version=None),  # unknown: not second-guessed
                 SimpleNamespace(kind="bundled", versions={}, openvino_version="2026.3.0-1"),
                 SimpleNamespace(kind="other", versions={}, openvino_version="2026.3.0-1")):
        assert crash_reason(tmp_path, fine) is None, fine
    (tmp_path / "openvino_tokenizer.xml").write_text(tokenizer_xml("Const"))
    assert crash_reason(tmp_path, lib) is None


def test_whisper_and_llm_pipelines_refuse_that_folder_before_c(double, tmp_path):
    whisper = make_whisper_dir(tmp_path / "whisper")
    (whisper / "openvino_tokenizer.xml").write_text(tokenizer_xml("Select"))
    llm = tmp_path / "llm"
    shutil.copytree(TINY_IR, llm)
    (llm / "openvino_tokenizer.xml").write_text(tokenizer_xml("Select"))
    old = official(double.library, "2026.3.0.0")
    for make in (lambda: ovgenai_c.WhisperPipeline(whisper, library=old),
                 lambda: ovgenai_c.LLMPipeline(llm, library=old)):
        with pytest.raises(errors.NotSupportedError, match="SIGSEGV"):
            make()
    assert not {op for op, _, _ in double.thread_log()} & {"whisper_create", "create"}
    assert double.live() == 0
    # the same folders on a fixed release (and on the double as it is) are created
    for lib in (official(double.library, "2026.4.0.0"), double.library):
        ovgenai_c.WhisperPipeline(whisper, library=lib).close()
        ovgenai_c.LLMPipeline(llm, library=lib).close()
    assert double.live() == 0


def test_a_plain_language_reaches_c_as_its_lang_to_id_key(double, tmp_path):
    cfg = WhisperGenerationConfig(lang_to_id={"<|de|>": 3, "<|en|>": 1}, language="de")
    assert cfg.c_values()["language"] == "<|de|>" and cfg.language == "de"
    assert WhisperGenerationConfig(language="<|en|>").c_values()["language"] == "<|en|>"
    assert WhisperGenerationConfig().c_values()["language"] is None
    with ovgenai_c.WhisperPipeline(make_whisper_dir(tmp_path / "w"), library=double.library) as pipe:
        cfg = pipe.get_generation_config()
        cfg.language = "de"
        pipe.set_generation_config(cfg)
        native = pipe._submit(lambda st: capi_whisper.read_generation_config(st.capi, st.handle)).wait()
        assert native["language"] == "<|de|>"  # what GenAI 2026.3's validate() and lang_to_id lookup accept
        assert pipe.get_generation_config().language == "de"  # the config keeps what was set, as pybind's
        res = pipe.generate(TONE)
        assert res.language == "de" and pipe.generate(TONE, language="<|de|>").texts == res.texts
