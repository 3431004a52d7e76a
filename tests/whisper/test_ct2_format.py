"""The CTranslate2 reader and the converter's checks: every defect of model.bin is a clear CT2FormatError."""
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ovgenai_c_tools.ct2_model import CT2FormatError, parse_ct2_model, read_ct2_model, write_ct2_model
from ovgenai_c_tools.whisper_ir import build_decoder, build_encoder, whisper_dims

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import make_tiny_whisper  # noqa: E402

VOCAB = 64
ALIASES = {"decoder/projection/weight": "decoder/embeddings/weight"}


@pytest.fixture(scope="module")
def variables():
    return make_tiny_whisper.make_variables(VOCAB, 0, [[1, 0]])


def _bytes(tmp_path: Path, variables, spec="WhisperSpec", aliases=ALIASES) -> bytes:
    path = tmp_path / "model.bin"
    write_ct2_model(path, spec, 3, variables, aliases)
    return path.read_bytes()


def test_round_trip(tmp_path, variables):
    data = _bytes(tmp_path, variables)
    model = read_ct2_model(tmp_path / "model.bin")
    assert (model.binary_version, model.spec_name, model.spec_revision) == (6, "WhisperSpec", 3)
    assert set(model.variables) == set(variables)
    for name, value in variables.items():
        assert model.variables[name].dtype == value.dtype and np.array_equal(model.variables[name], value)
    assert np.array_equal(model.get("decoder/projection/weight"), variables["decoder/embeddings/weight"])
    assert parse_ct2_model(data).variables.keys() == model.variables.keys()
    dims = whisper_dims(model)
    assert (dims.d_model, dims.encoder_layers, dims.decoder_layers, dims.vocab_size, dims.n_mels) == (
        make_tiny_whisper.D_MODEL, make_tiny_whisper.ENCODER_LAYERS, make_tiny_whisper.DECODER_LAYERS, VOCAB, 80)


@pytest.mark.parametrize("cut", [3, 10, 200, -1])
def test_truncated(tmp_path, variables, cut):
    data = _bytes(tmp_path, variables)
    with pytest.raises(CT2FormatError, match="truncated"):
        parse_ct2_model(data[:cut], "cut.bin")


def test_wrong_version(tmp_path, variables):
    data = _bytes(tmp_path, variables)
    with pytest.raises(CT2FormatError, match="binary version 5 is not supported"):
        parse_ct2_model(struct.pack("<I", 5) + data[4:])


def test_trailing_bytes(tmp_path, variables):
    with pytest.raises(CT2FormatError, match="unexpected bytes"):
        parse_ct2_model(_bytes(tmp_path, variables) + b"\0\0")


def test_unknown_dtype(tmp_path):
    data = _bytes(tmp_path, {"x": np.zeros(2, np.float32)}, aliases={})
    offset = data.index(b"x\0") + 2 + 1 + 4  # name, rank, one dim
    bad = data[:offset] + bytes([9]) + data[offset + 1:]
    with pytest.raises(CT2FormatError, match="unknown dtype code 9"):
        parse_ct2_model(bad)


def test_byte_count_mismatch(tmp_path):
    data = _bytes(tmp_path, {"x": np.zeros(2, np.float32)}, aliases={})
    offset = data.index(b"x\0") + 2 + 1 + 4 + 1
    bad = data[:offset] + struct.pack("<I", 12) + data[offset + 4:]
    with pytest.raises(CT2FormatError, match="should have 8 bytes, the file says 12"):
        parse_ct2_model(bad)


def test_alias_to_missing_variable(tmp_path):
    with pytest.raises(CT2FormatError, match="missing variable 'nope'"):
        parse_ct2_model(_bytes(tmp_path, {"x": np.zeros(2, np.float32)}, aliases={"y": "nope"}))


@pytest.mark.parametrize("missing", ["decoder/layer_1/attention/linear_2/weight", "encoder/num_heads",
                                     "encoder/layer_norm/gamma", "decoder/position_encodings/encodings"])
def test_missing_variable(tmp_path, variables, missing):
    reduced = {k: v for k, v in variables.items() if k != missing}
    model = parse_ct2_model(_bytes(tmp_path, reduced), "model.bin")
    with pytest.raises(CT2FormatError, match=f"no variable '{missing}'"):
        build_encoder(model)
        build_decoder(model)


def test_wrong_shape(tmp_path, variables):
    bad = dict(variables)
    bad["decoder/layer_0/ffn/linear_1/weight"] = np.zeros((5, 7), np.float16)
    model = parse_ct2_model(_bytes(tmp_path, bad), "model.bin")
    with pytest.raises(CT2FormatError, match=r"'decoder/layer_0/ffn/linear_1/weight' has shape \(5, 7\)"):
        build_decoder(model)


def test_not_whisper(tmp_path, variables):
    model = parse_ct2_model(_bytes(tmp_path, variables, spec="TransformerSpec"), "model.bin")
    with pytest.raises(CT2FormatError, match="not 'WhisperSpec'"):
        whisper_dims(model)


def test_cli_reports_a_format_error(tmp_path, variables):
    src = tmp_path / "src"
    src.mkdir()
    (src / "model.bin").write_bytes(_bytes(tmp_path, variables)[:1000])
    r = subprocess.run([sys.executable, "-m", "ovgenai_c_tools.convert_whisper_ct2", str(src), str(tmp_path / "out")],
                       cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 2, r.stderr
    assert b"truncated" in r.stderr and b"Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_cli_missing_source_files(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ovgenai_c_tools.convert_whisper_ct2", str(tmp_path), str(tmp_path / "o")],
                       cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 2 and b"no model.bin" in r.stderr and b"Traceback" not in r.stderr


def test_model_bin_in_parts(tmp_path, variables):
    """model.bin.part1, .part2, ... are read as one file (the multilingual model ships that way)."""
    from ovgenai_c_tools.convert_whisper_ct2 import read_model_bin

    data = _bytes(tmp_path, variables)
    src = tmp_path / "parts"
    src.mkdir()
    cut = len(data) // 3
    (src / "model.bin.part1").write_bytes(data[:cut])
    (src / "model.bin.part2").write_bytes(data[cut:2 * cut])
    (src / "model.bin.part3").write_bytes(data[2 * cut:])
    model = read_model_bin(src)
    assert set(model.variables) == set(variables)
    (src / "model.bin.part3").unlink()
    with pytest.raises(CT2FormatError, match="truncated"):
        read_model_bin(src)


def test_special_tokens_and_timestamp_padding():
    from ovgenai_c_tools.convert_whisper_ct2 import SpecialTokens, WhisperSourceError, full_vocabulary

    names = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|de|>", "<|haw|>", "<|translate|>",
             "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nocaptions|>", "<|notimestamps|>"]
    vocab = ["a", "b"] + names
    special = SpecialTokens(vocab, len(vocab) + 3)
    assert (special.eot, special.sot, special.translate, special.no_timestamps) == (2, 3, 7, 12)
    assert special.languages == {"<|en|>": 4, "<|de|>": 5, "<|haw|>": 6} and not special.is_multilingual
    assert full_vocabulary(vocab, special, len(vocab) + 3)[-3:] == ["<|0.00|>", "<|0.02|>", "<|0.04|>"]
    with pytest.raises(WhisperSourceError, match="no <\\|notimestamps\\|> token"):
        SpecialTokens(vocab[:-1], len(vocab))
    with pytest.raises(WhisperSourceError, match="the gap is not the timestamp tokens"):
        full_vocabulary(vocab, special, len(vocab) + 2000)
