"""Tokenizer::decode_batch: the batching engine decodes the streamed tokens of all its requests in one detokenizer
call per step, right-padding the rows with a special token the detokenizer skips. Every row must come out exactly as
decoding it alone does. Compiled with g++ from the engine's tokenizer against the openvino wheel's headers and
library, run on the real SmolLM2 tokenizer and on the tiny fixture's."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import openvino_wheel_paths
from testsupport import native_unit, nlohmann_include

pytestmark = pytest.mark.engine_explicit  # no pipeline: once per run, not again in the SDPA pass

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native" / "src"
SOURCES = [NATIVE / "engine" / "tokenizer.cpp", *sorted((NATIVE / "json").glob("*.cpp")),
           *sorted((NATIVE / "common").glob("*.cpp")),
           Path(__file__).with_name("decode_batch_main.cpp")]


@pytest.fixture(scope="module")
def decode_batch_exe():
    include, libopenvino, ext = openvino_wheel_paths()
    inputs = SOURCES + [NATIVE / "engine" / "tokenizer.hpp"] + sorted(NATIVE.glob("json/*.hpp")) \
        + sorted(NATIVE.glob("common/*.hpp"))
    exe = native_unit("decode-batch", ["-std=c++17", "-O1", "-I", str(NATIVE), "-isystem", str(include), "-isystem",
                                       str(nlohmann_include()), *map(str, SOURCES), str(libopenvino),
                                       f"-Wl,-rpath,{libopenvino.parent}"], inputs, salt=str(libopenvino))
    return exe, ext


def _check(exe_ext, folder: Path, batches: int) -> None:
    exe, ext = exe_ext
    res = subprocess.run([str(exe), str(folder), str(ext), str(batches), "11"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    assert lines[0] == "batch 1", "no padding token found: the batch path would not run"
    assert lines[-1] == "mismatches 0", "\n".join(lines[:20])


def test_smollm2_rows_decode_in_a_batch_as_alone(decode_batch_exe, smol_dir):
    _check(decode_batch_exe, smol_dir, 300)


def test_tiny_fixture_rows_decode_in_a_batch_as_alone(decode_batch_exe, tiny_dir):
    _check(decode_batch_exe, tiny_dir, 100)
