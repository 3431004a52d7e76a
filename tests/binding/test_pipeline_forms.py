"""openvino_genai's other two LLMPipeline constructors: ``(models_path, tokenizer, device)`` and
``(model_xml, weights, tokenizer, device, generation_config)`` (a model held in memory, as upstream's
encrypted_model_causal_lm sample makes one). The C API loads a folder; the binding stages one and removes it."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ovgenai_c
from ovgenai_c import errors, model_staging

from testsupport import child_outcome

ROOT = Path(__file__).resolve().parents[2]
TINY_IR = ROOT / "tests" / "fixtures" / "tiny" / "ir"

F32 = {"INFERENCE_PRECISION_HINT": "f32"}  # outputs compared across pipelines: one precision on all of them
PROMPT = "The quick brown fox"
TOKENIZER_FILES = ["openvino_tokenizer.xml", "openvino_tokenizer.bin", "openvino_detokenizer.xml",
                   "openvino_detokenizer.bin"]


@pytest.fixture(autouse=True)
def staging_root(tmp_path, monkeypatch) -> Path:
    """Every staged folder of a test goes here, so the test can see that none is left behind."""
    root = tmp_path / "staging"
    root.mkdir()
    monkeypatch.setenv("OVGENAI_C_STAGING_DIR", str(root))
    return root


@pytest.fixture(scope="module")
def reference() -> str:
    """The folder form's answer (the one every other form must give)."""
    with ovgenai_c.LLMPipeline(TINY_IR, "CPU", **F32) as pipe:
        text = str(pipe.generate(PROMPT, max_new_tokens=12))
    assert text
    return text


def _memory_tokenizer() -> ovgenai_c.Tokenizer:
    parts = []
    for stem in ("openvino_tokenizer", "openvino_detokenizer"):
        parts += [(TINY_IR / f"{stem}.xml").read_text(), np.fromfile(TINY_IR / f"{stem}.bin", dtype=np.uint8)]
    return ovgenai_c.Tokenizer(*parts)


def _model_in_memory():
    return (TINY_IR / "openvino_model.xml").read_text(), np.fromfile(TINY_IR / "openvino_model.bin", dtype=np.uint8)


def test_tokenizer_of_the_model_folder_needs_no_staging(reference, staging_root):
    tok = ovgenai_c.Tokenizer(TINY_IR)
    with ovgenai_c.LLMPipeline(TINY_IR, tok, "CPU", **F32) as pipe:
        assert not any(staging_root.iterdir())
        assert pipe.get_tokenizer() is tok
        assert pipe.models_path == str(TINY_IR)
        assert str(pipe.generate(PROMPT, max_new_tokens=12)) == reference


def test_tokenizer_from_another_folder_replaces_the_folders_own(reference, staging_root, tmp_path):
    model_only = tmp_path / "model_only"
    model_only.mkdir()
    for name in ("openvino_model.xml", "openvino_model.bin"):
        shutil.copy(TINY_IR / name, model_only / name)
    with pytest.raises(errors.ModelNotFoundError, match="openvino_tokenizer.xml"):
        ovgenai_c.LLMPipeline(model_only, "CPU")  # the folder alone has no tokenizer: the object supplies it
    tok = ovgenai_c.Tokenizer(TINY_IR)
    with ovgenai_c.LLMPipeline(model_only, tokenizer=tok, device="CPU", config=F32) as pipe:
        assert not any(staging_root.iterdir()), "the staged folder outlived the constructor"
        assert pipe.get_tokenizer() is tok
        assert pipe.models_path == str(model_only)
        assert str(pipe.generate(PROMPT, max_new_tokens=12)) == reference
        pipe.start_chat()
        assert pipe.generate(PROMPT, max_new_tokens=4).texts[0]  # runs after the folder is gone
        pipe.finish_chat()


def test_model_in_memory(reference, staging_root):
    xml, weights = _model_in_memory()
    tok = _memory_tokenizer()
    cfg = ovgenai_c.GenerationConfig(max_new_tokens=12)
    with ovgenai_c.LLMPipeline(xml, weights, tok, "CPU", cfg, **F32) as pipe:
        assert not any(staging_root.iterdir()), "the staged folder outlived the constructor"
        assert pipe.models_path == "<model in memory>" and "<model in memory>" in repr(pipe)
        assert pipe.get_generation_config().max_new_tokens == 12
        assert pipe.get_generation_config().eos_token_id == tok.get_eos_token_id()
        assert str(pipe.generate(PROMPT)) == reference
        assert pipe.get_tokenizer() is tok


def test_model_in_memory_as_bytes_with_a_folder_tokenizer(reference, staging_root):
    xml, weights = _model_in_memory()
    with ovgenai_c.LLMPipeline(model=xml.encode(), weights=weights.tobytes(), tokenizer=ovgenai_c.Tokenizer(TINY_IR),
                               device="CPU", **F32) as pipe:
        assert str(pipe.generate(PROMPT, max_new_tokens=12)) == reference
    assert not any(staging_root.iterdir())


def test_model_in_memory_as_openvino_tensor(reference):
    if ovgenai_c.library_info().get("kind") != "bundled":
        pytest.skip("importing the openvino wheel beside another OpenVINO version is refused (a second libopenvino)")
    ov = pytest.importorskip("openvino", exc_type=ImportError)
    xml, weights = _model_in_memory()
    with ovgenai_c.LLMPipeline(xml, ov.Tensor(weights), _memory_tokenizer(), "CPU", **F32) as pipe:
        assert str(pipe.generate(PROMPT, max_new_tokens=12)) == reference


def test_staged_folder_is_private_and_removed(staging_root):
    xml, weights = _model_in_memory()
    staged = model_staging.stage_memory_model(xml, weights, _memory_tokenizer())
    try:
        assert staged.path.parent == staging_root
        assert stat.S_IMODE(staged.path.stat().st_mode) == 0o700
        names = sorted(p.name for p in staged.path.iterdir())
        assert names == sorted(["openvino_model.xml", "openvino_model.bin", *TOKENIZER_FILES])
        for p in staged.path.iterdir():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600
            assert p.read_bytes() == (TINY_IR / p.name).read_bytes()
    finally:
        staged.remove()
    assert not staged.path.exists()


def test_bytes_go_to_a_memory_backed_folder_or_warn(monkeypatch, tmp_path):
    monkeypatch.delenv("OVGENAI_C_STAGING_DIR")
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(model_staging, "MEMORY_BACKED_ROOTS", (str(shm),))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    xml, weights = _model_in_memory()
    staged = model_staging.stage_memory_model(xml, weights, _memory_tokenizer())
    assert staged.path.parent == shm
    staged.remove()
    # no memory-backed folder: the system's temp folder, with a warning that the bytes touch a disk
    disk = tmp_path / "disk"
    disk.mkdir()
    monkeypatch.setattr(model_staging, "MEMORY_BACKED_ROOTS", (str(tmp_path / "absent"),))
    monkeypatch.setattr("tempfile.tempdir", str(disk))
    with pytest.warns(model_staging.StagingWarning, match="written to a private folder under"):
        staged = model_staging.stage_memory_model(xml, weights, _memory_tokenizer())
    assert staged.path.parent == disk
    staged.remove()
    # only links (a tokenizer read from a folder): no bytes written, no warning, wherever it goes
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", model_staging.StagingWarning)
        staged = model_staging.stage_with_tokenizer(str(TINY_IR), ovgenai_c.Tokenizer(TINY_IR))
    assert all(p.is_symlink() for p in staged.path.iterdir())
    staged.remove()


def test_wrong_arguments_are_named(staging_root):
    xml, weights = _model_in_memory()
    tok = _memory_tokenizer()

    class Tokenizer:  # e.g. openvino_genai's: the C API cannot take it
        pass

    with pytest.raises(TypeError, match="tokenizer must be an ovgenai_c.Tokenizer"):
        ovgenai_c.LLMPipeline(TINY_IR, Tokenizer(), "CPU")
    with pytest.raises(TypeError, match="tokenizer must be an ovgenai_c.Tokenizer"):
        ovgenai_c.LLMPipeline(xml, weights, Tokenizer(), "CPU")
    with pytest.raises(TypeError, match="model must be the IR's XML text"):
        ovgenai_c.LLMPipeline(model=42, weights=weights, tokenizer=tok, device="CPU")
    with pytest.raises(TypeError, match="weights must be a uint8 openvino.Tensor, numpy array or bytes"):
        ovgenai_c.LLMPipeline(xml, [1, 2, 3], tok, "CPU")
    with pytest.raises(errors.InvalidParameterError, match="generation_config must be a GenerationConfig"):
        ovgenai_c.LLMPipeline(xml, weights, tok, "CPU", {"max_new_tokens": 3})
    with pytest.raises(errors.DeviceError, match="device must be a str"):
        ovgenai_c.LLMPipeline(xml, weights, tok, 0)
    with pytest.raises(TypeError, match="device"):
        ovgenai_c.LLMPipeline(TINY_IR, tok)  # the tokenizer form names its device
    assert not any(staging_root.iterdir())


def test_a_broken_model_in_memory_is_named_before_the_load(staging_root):
    xml, weights = _model_in_memory()
    tok = _memory_tokenizer()
    with pytest.raises(errors.NetworkNotReadError, match="not well-formed XML"):
        ovgenai_c.LLMPipeline(xml[: len(xml) // 2], weights, tok, "CPU")
    with pytest.raises(errors.NetworkNotReadError, match="not an OpenVINO IR's XML text"):
        ovgenai_c.LLMPipeline("<net/>", weights, tok, "CPU")
    with pytest.raises(errors.NetworkNotReadError, match="the weights hold 100 bytes, but constant"):
        ovgenai_c.LLMPipeline(xml, weights[:100], tok, "CPU")
    with pytest.raises(errors.InvalidParameterError, match="contains a NUL character"):
        ovgenai_c.LLMPipeline(xml + "\0", weights, tok, "CPU")
    with pytest.raises(errors.InvalidParameterError, match="not valid Unicode text"):
        ovgenai_c.LLMPipeline(xml + "\udc80", weights, tok, "CPU")
    assert not any(staging_root.iterdir())


def test_a_load_failure_names_what_the_user_gave(staging_root, tmp_path):
    """What OpenVINO's reader refuses fails the load (LLMPipeline's two staged forms, ContinuousBatchingPipeline's
    tokenizer form) with an exception, not a crash (in a child), names the model as the user gave it rather than the
    staged folder, and leaves no staged folder behind."""
    broken = tmp_path / "broken"
    broken.mkdir()
    xml = (TINY_IR / "openvino_model.xml").read_text()
    (broken / "openvino_model.xml").write_text(xml.replace('type="Parameter"', 'type="Parametr"', 1))
    shutil.copy(TINY_IR / "openvino_model.bin", broken / "openvino_model.bin")
    code = textwrap.dedent(f"""
        import numpy as np, ovgenai_c
        from pathlib import Path
        tok = ovgenai_c.Tokenizer(Path({str(TINY_IR)!r}))
        broken = Path({str(broken)!r})
        xml = (broken / "openvino_model.xml").read_text()
        weights = np.fromfile(broken / "openvino_model.bin", dtype=np.uint8)
        makers = [lambda: ovgenai_c.LLMPipeline(xml, weights, tok, "CPU"),
                  lambda: ovgenai_c.LLMPipeline(broken, tok, "CPU")]
        if ovgenai_c.library_info()["kind"] == "bundled":  # batching is the bundled backend's
            makers.append(lambda: ovgenai_c.ContinuousBatchingPipeline(broken, tok, None, "CPU"))
        for make in makers:
            try:
                make()
            except ovgenai_c.GenAIError as exc:
                print("refused:", str(exc).replace(chr(10), " "))
            else:
                raise SystemExit("a broken model loaded")
    """)
    # the loader of this process may have set the tokenizers path for the library it loaded; the child finds its own
    env = {k: v for k, v in os.environ.items() if k != "OPENVINO_TOKENIZERS_PATH_GENAI"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    child_outcome(proc, "broken models")
    refusals = [line for line in proc.stdout.splitlines() if line.startswith("refused:")]
    assert len(refusals) == (3 if ovgenai_c.library_info()["kind"] == "bundled" else 2), proc.stdout
    assert "the model given in memory (staged in a private folder, now removed)" in refusals[0]
    for refusal in refusals[1:]:
        assert f"the model folder {broken} with the given Tokenizer (staged in a private folder" in refusal
    assert "ovgenai_c-model-" not in proc.stdout
    assert not any(staging_root.iterdir()), "a failed load left its staged folder"
