"""ovgenai_c.gguf_ir: GGUF -> OpenVINO IR by the bundled backend (no openvino_genai), the tokenizer a GGUF carries
(gguf_tokenizer, LLMPipeline.get_tokenizer() on a GGUF file), ``python -m ovgenai_c.gguf_ir``. The IR is compared
with tests/fixtures/tiny/ir, which real OpenVINO GenAI wrote from tests/fixtures/tiny/tiny.gguf
(``enable_save_ov_model``). Malformed GGUF files are read in a child process (a native crash fails the test there,
not the run)."""
from __future__ import annotations

import gc
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import ovgenai_c
from ovgenai_c import _loader, errors, gguf_ir
from ovgenai_c.tokenizer import Tokenizer
from testsupport import child_outcome, settle_garbage

ROOT = Path(__file__).resolve().parents[2]
TINY_GGUF = ROOT / "tests" / "fixtures" / "tiny" / "tiny.gguf"
TINY_IR = TINY_GGUF.parent / "ir"
MODEL = ["openvino_model.bin", "openvino_model.xml"]
TOKENIZERS = ["openvino_detokenizer.bin", "openvino_detokenizer.xml", "openvino_tokenizer.bin",
              "openvino_tokenizer.xml"]


@pytest.fixture(scope="module")
def lib(bundled_path):
    return _loader.open_library(bundled_path)


def _names(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir())


# Names OpenVINO numbers per process (Constant_123, ShapeOf_11, Constant_631_compressed, Parameter_2128) differ
# between two runs that build the same graph; so do the model's <net name> and the writer's version in rt_info.
_AUTO_NAME = re.compile(r'name="([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z][A-Za-z0-9]*)*)_\d+((?:_[A-Za-z]+)*)"')


def _normalised_xml(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r'<net name="[^"]*"', '<net name=""', text, count=1)
    text = _AUTO_NAME.sub(lambda m: f'name="{m.group(1)}_N{m.group(2)}"', text)
    return re.sub(r'(<openvino_genai_version value=")[^"]*"', r'\1"', text)


def test_the_normaliser_drops_only_numbered_names_the_net_name_and_the_version():
    # (so that it cannot make two different graphs equal)
    def without_names(text):
        text = re.sub(r' name="[^"]*"', "", text)
        return re.sub(r'(<openvino_genai_version value=")[^"]*"', r'\1"', text)

    for name in ("openvino_model.xml", "openvino_tokenizer.xml", "openvino_detokenizer.xml"):
        raw = (TINY_IR / name).read_text(encoding="utf-8")
        norm = _normalised_xml(TINY_IR / name)
        assert norm != raw and without_names(norm) == without_names(raw), name
    model = _normalised_xml(TINY_IR / "openvino_model.xml")
    assert 'name="Constant_N"' in model and 'name="Constant_N_compressed"' in model and '<net name=""' in model
    assert '<openvino_genai_version value="" />' in _normalised_xml(TINY_IR / "openvino_tokenizer.xml")


# --- convert_gguf ---------------------------------------------------------------------------------------------------
def test_all_parts_are_the_ir_genai_writes(lib, tmp_path):
    out = gguf_ir.convert_gguf(TINY_GGUF, tmp_path / "ir", library=lib)
    assert out == tmp_path / "ir" and _names(out) == sorted(MODEL + TOKENIZERS)
    for name in MODEL + TOKENIZERS:
        if name.endswith(".bin"):
            assert (out / name).read_bytes() == (TINY_IR / name).read_bytes(), name
        else:
            assert _normalised_xml(out / name) == _normalised_xml(TINY_IR / name), name
    # the folder is an IR model the library loads, with the chat template in the tokenizer's rt_info
    from ovgenai_c.ir_folder import is_ir_folder

    assert is_ir_folder(out)
    assert Tokenizer(out).get_chat_template() == Tokenizer(TINY_IR).get_chat_template() != ""


@pytest.mark.parametrize("parts, files", [("model", MODEL), ("tokenizers", TOKENIZERS)])
def test_each_part_writes_exactly_its_files(lib, tmp_path, parts, files):
    out = gguf_ir.convert_gguf(str(TINY_GGUF), str(tmp_path / "a" / "b"), parts, library=lib)  # (made, parents too)
    assert _names(out) == sorted(files)
    for name in files:
        if name.endswith(".bin"):
            assert (out / name).read_bytes() == (TINY_IR / name).read_bytes(), name


def test_converting_again_over_the_folder_gives_the_same_bytes(lib, tmp_path):
    out = gguf_ir.convert_gguf(TINY_GGUF, tmp_path / "ir", library=lib)
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    (out / "openvino_model.bin").write_bytes(b"stale")
    (out / "unrelated.txt").write_text("kept")
    gguf_ir.convert_gguf(TINY_GGUF, out, library=lib)
    assert (out / "openvino_model.bin").read_bytes() == first["openvino_model.bin"]
    assert (out / "unrelated.txt").read_text() == "kept"  # (it writes its files; it does not empty the folder)


def test_the_default_library_is_the_bundled_backend(tmp_path):
    # no library given: the process's library when it has the extra, else the bundled backend opened beside it
    if next((p for p in _loader.bundled_candidates() if p.is_file()), None) is None:
        pytest.skip("bundled backend not built")
    assert gguf_ir.bundled_library().has_extra("ovgenai_c_bundled_convert_gguf")
    out = gguf_ir.convert_gguf(TINY_GGUF, tmp_path / "ir", "model")
    assert (out / "openvino_model.bin").read_bytes() == (TINY_IR / "openvino_model.bin").read_bytes()


def test_a_missing_file_is_model_not_found(lib, tmp_path):
    for missing in (tmp_path / "nope.gguf", TINY_IR):  # (a folder is no GGUF file either)
        with pytest.raises(errors.ModelNotFoundError, match="GGUF file not found"):
            gguf_ir.convert_gguf(missing, tmp_path / "out", library=lib)
    assert not (tmp_path / "out").exists()  # refused before anything was made


@pytest.mark.parametrize("data, needle", [
    (b"", "is not a GGUF file"),
    (b"not a model at all, just text", "is not a GGUF file"),
    (b"GGUF\x03\x00\x00\x00", "is not a GGUF file"),
])
def test_a_file_that_is_not_a_gguf_is_a_typed_error(lib, tmp_path, data, needle):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(data)
    with pytest.raises(errors.GenAIError, match=needle) as ei:
        gguf_ir.convert_gguf(bad, tmp_path / "out", library=lib)
    assert str(bad) in str(ei.value)
    assert not list((tmp_path / "out").iterdir())  # nothing half-written


@pytest.mark.parametrize("parts", ["everything", "", "Model", None, 3])
def test_bad_parts_are_invalid_parameters(lib, tmp_path, parts):
    with pytest.raises(errors.InvalidParameterError, match="parts must be one of"):
        gguf_ir.convert_gguf(TINY_GGUF, tmp_path / "out", parts, library=lib)
    assert not (tmp_path / "out").exists()


def test_an_output_folder_that_cannot_be_made_is_an_invalid_parameter(lib, tmp_path):
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(errors.InvalidParameterError, match="cannot make the output folder"):
        gguf_ir.convert_gguf(TINY_GGUF, tmp_path / "a-file", library=lib)
    with pytest.raises(errors.InvalidParameterError, match="cannot make the output folder"):
        gguf_ir.convert_gguf(TINY_GGUF, tmp_path / "a-file" / "sub", library=lib)


def test_a_library_without_the_extra_is_refused(double, tmp_path):
    with pytest.raises(errors.NotSupportedError, match="cannot convert GGUF files"):
        gguf_ir.convert_gguf(TINY_GGUF, tmp_path / "out", library=double.library)


# Malformed GGUF files, read natively: in a child, so that a crash fails this test with its signal (and is not
# the end of the run). Each must be refused with a GenAIError naming the cause -- no crash, no hang, no huge
# allocation from a forged count or length.
_MALFORMED = r"""
import json, os, struct, sys, tempfile
from ovgenai_c import _loader, errors, gguf_ir
lib = _loader.open_library(sys.argv[1])
data = open(sys.argv[2], "rb").read()
def at(off, b):
    return data[:off] + b + data[off + len(b):]
arch = data.index(b"llama", data.index(b"general.architecture"))
cases = {"truncated-%d" % n: data[:n] for n in (0, 3, 4, 8, 16, 24, 100, 1000, 4096, len(data) // 4,
                                                 len(data) // 2, len(data) - 1)}
cases.update({
    "version-1": at(4, struct.pack("<I", 1)),
    "version-9": at(4, struct.pack("<I", 9)),
    "tensor-count-2^63": at(8, struct.pack("<Q", 2 ** 63)),
    "metadata-count-2^63": at(16, struct.pack("<Q", 2 ** 63)),
    "key-length-2^62": at(24, struct.pack("<Q", 2 ** 62)),
    "architecture-llamo": at(arch, b"llamo"),
    "architecture-qwen2-without-its-keys": at(arch, b"qwen2"),
})
work = tempfile.mkdtemp()
out = {}
for name, blob in cases.items():
    path = os.path.join(work, name + ".gguf")
    with open(path, "wb") as f:
        f.write(blob)
    try:
        gguf_ir.convert_gguf(path, os.path.join(work, name), library=lib)
        out[name] = "converted"
    except errors.GenAIError as exc:
        out[name] = type(exc).__name__ + ": " + str(exc)
print(json.dumps(out))
"""

_MALFORMED_EXPECT = {
    **{f"truncated-{n}": "is not a GGUF file" for n in (0, 3, 4, 8, 16)},
    "truncated-24": "impossible tensor or metadata counts",
    "truncated-100": "ends early", "truncated-1000": "ends early", "truncated-4096": "ends early",
    "version-1": "GGUF version 1", "version-9": "GGUF version 9",
    "tensor-count-2^63": "impossible tensor or metadata counts",
    "metadata-count-2^63": "impossible tensor or metadata counts",
    "key-length-2^62": "ends early",
    "architecture-llamo": "holds a 'llamo' model",
    "architecture-qwen2-without-its-keys": "lacks the metadata key 'qwen2.",
}


def test_malformed_gguf_files_are_refused_without_crashing(bundled_path):
    proc = subprocess.run([sys.executable, "-c", _MALFORMED, bundled_path, str(TINY_GGUF)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    child_outcome(proc, "reading malformed GGUF files")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    size = TINY_GGUF.stat().st_size
    for n in (size // 4, size // 2, size - 1):  # cut inside the tensor data
        assert re.search(r"is truncated: tensor '.*' ends past the file's", got.pop(f"truncated-{n}")), n
    for name, needle in _MALFORMED_EXPECT.items():
        assert not got[name].startswith("converted") and needle in got[name], (name, got[name])
    assert sorted(got) == sorted(_MALFORMED_EXPECT)


# --- the tokenizer a GGUF carries -----------------------------------------------------------------------------------
def _tokenizer_folders(where: Path) -> list:
    return sorted(where.glob("ovgenai_c-gguf-tokenizer-*"))


def test_gguf_tokenizer_folder_goes_with_the_tokenizer(lib, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tok = gguf_ir.gguf_tokenizer(TINY_GGUF, lib)
    (folder,) = _tokenizer_folders(tmp_path)
    assert _names(folder) == TOKENIZERS  # the tokenizer IR only
    ref = Tokenizer(TINY_IR)
    assert tok.encode("Hello world").input_ids.data.tolist() == ref.encode("Hello world").input_ids.data.tolist()
    del tok
    gc.collect()
    settle_garbage()
    assert _tokenizer_folders(tmp_path) == [] and not folder.exists()
    # a GGUF it cannot read leaves no folder behind either
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00")
    with pytest.raises(errors.GenAIError, match="not a GGUF file"):
        gguf_ir.gguf_tokenizer(bad, lib)
    with pytest.raises(errors.ModelNotFoundError):
        gguf_ir.gguf_tokenizer(tmp_path / "missing.gguf", lib)
    assert _tokenizer_folders(tmp_path) == []


TEXTS = ["Hello world", "", "   leading and trailing   ", "Привет, мир! Ünïcödé", "你好，世界。", "emoji 🎉🚀",
         "line one\nline two\r\n\ttabbed", "<|im_start|>user\nHi<|im_end|>", "numbers 1234567890 -42", "x" * 300]


def test_a_gguf_pipelines_tokenizer_is_the_ir_folders(lib, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pipe = ovgenai_c.LLMPipeline(TINY_GGUF, "CPU", library=lib)
    try:
        tok = pipe.get_tokenizer()
        assert pipe.get_tokenizer() is tok  # made once
        assert len(_tokenizer_folders(tmp_path)) == 1
        ref = Tokenizer(TINY_IR)
        for special in (True, False):
            for text in TEXTS:
                got = tok.encode(text, add_special_tokens=special)
                want = ref.encode(text, add_special_tokens=special)
                assert got.input_ids.data.tolist() == want.input_ids.data.tolist(), (text, special)
                assert got.attention_mask.data.tolist() == want.attention_mask.data.tolist(), (text, special)
                ids = want.input_ids.data.tolist()[0]
                for skip in (True, False):
                    assert tok.decode(ids, skip_special_tokens=skip) == ref.decode(ids, skip_special_tokens=skip)
        batch = tok.encode(TEXTS[:4]).input_ids.data.tolist()
        assert batch == ref.encode(TEXTS[:4]).input_ids.data.tolist()
        assert (tok.get_bos_token_id(), tok.get_eos_token_id(), tok.get_pad_token_id()) == \
            (ref.get_bos_token_id(), ref.get_eos_token_id(), ref.get_pad_token_id()) == (1, 2, 2)
        assert tok.get_vocab() == ref.get_vocab() and len(tok.get_vocab()) == 1024
        assert tok.get_chat_template() == ref.get_chat_template()
        history = [{"role": "user", "content": "What is the capital of France?"}]
        templated = tok.apply_chat_template(history, add_generation_prompt=True)
        assert templated == ref.apply_chat_template(history, add_generation_prompt=True)
        # the pipeline's own prompt: its tokens are those the tokenizer counts (the provider relies on it)
        r = pipe.generate(templated, max_new_tokens=2, apply_chat_template=False)
        assert r.perf_metrics.get_num_input_tokens() == tok.encode(templated, add_special_tokens=True
                                                                   ).input_ids.data.shape[-1]
    finally:
        pipe.close()
    del pipe, tok
    gc.collect()
    settle_garbage()
    assert _tokenizer_folders(tmp_path) == []  # the temporary IR went with the pipeline's tokenizer


# --- python -m ovgenai_c.gguf_ir --------------------------------------------------------------------------------------
def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ovgenai_c.gguf_ir", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_command_line_and_its_exit_codes(bundled_path, tmp_path):
    r = _run(str(TINY_GGUF), str(tmp_path / "ir"))
    assert r.returncode == 0 and r.stdout == f"{tmp_path / 'ir'}\n" and r.stderr == "", r.stderr
    assert _names(tmp_path / "ir") == sorted(MODEL + TOKENIZERS)
    assert (tmp_path / "ir" / "openvino_model.bin").read_bytes() == (TINY_IR / "openvino_model.bin").read_bytes()
    r = _run(str(TINY_GGUF), str(tmp_path / "tok"), "--parts", "tokenizers")
    assert r.returncode == 0 and _names(tmp_path / "tok") == TOKENIZERS, r.stderr
    # refusals: exit 1 with one line on stderr (no traceback), nothing on stdout
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"plain text")
    (tmp_path / "a-file").write_text("x")
    for args, needle in (([str(tmp_path / "missing.gguf"), str(tmp_path / "o1")], "GGUF file not found"),
                         ([str(bad), str(tmp_path / "o2")], "is not a GGUF file"),
                         ([str(TINY_GGUF), str(tmp_path / "a-file")], "cannot make the output folder")):
        r = _run(*args)
        assert r.returncode == 1 and r.stdout == "", (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ovgenai_c.gguf_ir: ") and needle in lines[0], r.stderr
    # usage errors: argparse's exit 2
    r = _run(str(TINY_GGUF), str(tmp_path / "o3"), "--parts", "everything")
    assert r.returncode == 2 and "invalid choice: 'everything'" in r.stderr
    assert _run(str(TINY_GGUF)).returncode == 2
    assert not (tmp_path / "o3").exists()
    r = _run("--help")
    assert r.returncode == 0 and "GGUF -> OpenVINO IR" in r.stdout


def test_the_command_needs_no_openvino_genai(bundled_path, tmp_path):
    shadow = tmp_path / "shadow" / "openvino_genai"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('openvino_genai is not installed here (test)')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow.parent), str(ROOT)])}
    probe = subprocess.run([sys.executable, "-c", "import openvino_genai"], capture_output=True, text=True, env=env,
                           timeout=60)
    assert probe.returncode != 0 and "not installed here (test)" in probe.stderr
    code = ("import sys, runpy\nsys.argv = ['gguf_ir'] + sys.argv[1:]\n"
            "try:\n    runpy.run_module('ovgenai_c.gguf_ir', run_name='__main__')\n"
            "finally:\n    print('openvino_genai' in sys.modules, file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code, str(TINY_GGUF), str(tmp_path / "ir")], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "False"
    assert (tmp_path / "ir" / "openvino_model.bin").read_bytes() == (TINY_IR / "openvino_model.bin").read_bytes()


def test_struct_layout_of_the_fixture_header():
    # (the malformed-file cases above forge these fields at these offsets: GGUF v3, u64 counts)
    head = TINY_GGUF.read_bytes()[:32]
    magic, version, tensors, kv, keylen = struct.unpack("<4sIQQQ", head)
    assert (magic, version, tensors, kv, keylen) == (b"GGUF", 3, 21, 26, len("general.architecture"))
