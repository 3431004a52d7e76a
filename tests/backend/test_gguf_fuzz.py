"""The GGUF reader against damaged files, under AddressSanitizer + UBSan: gguf_fuzz_main.cpp reads thousands of
mutated copies of real GGUFs (the tiny fixture and quantized variants from scripts/make_tiny_gguf.py: every tensor
type, biases, qwen3's norms) as the engine reads a model — the file, the language model, the tokenizer models. A
GGUF is untrusted input: every case must end in a model or a refusal, never a crash, a sanitizer report or a hang.
The cases are fixed by a seed, so a failure names a case that fails again."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import openvino_wheel_paths, tiny_gguf_generator
from testsupport import native_unit, nlohmann_include

pytest.importorskip("gguf", reason="the gguf package (fixture generator) not installed")
pytestmark = pytest.mark.engine_explicit  # no pipeline: once per run, not again in the SDPA pass

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native" / "src"
GGUF_DIR = NATIVE / "engine" / "gguf"
SOURCES = [GGUF_DIR / f"{name}.cpp" for name in ("gguf_file", "gguf_weights", "gguf_model", "gguf_tokenizer")] + \
          [NATIVE / "engine" / "openvino_core.cpp", Path(__file__).with_name("gguf_fuzz_main.cpp")]
HEADERS = sorted(GGUF_DIR.glob("*.hpp")) + [NATIVE / "engine" / "openvino_core.hpp"]
CASES = 2500
SEED = 20261207
VARIANTS = ["llama-q4_k_m", "qwen2-q8_0", "qwen3-mixed-tied", "llama-q4_0"]




@pytest.fixture(scope="module")
def fuzzer():
    include, libopenvino, ext = openvino_wheel_paths()
    exe = native_unit("gguf-fuzz", ["-std=c++17", "-O1", "-g", "-fno-omit-frame-pointer",
                                    "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                                    "-I", str(NATIVE), "-isystem", str(include), "-isystem", str(nlohmann_include()),
                                    *map(str, SOURCES), str(libopenvino), "-ldl", f"-Wl,-rpath,{libopenvino.parent}"],
                      SOURCES + HEADERS, salt=str(libopenvino))
    return exe, ext


def test_damaged_gguf_files_are_read_or_refused_never_crash(fuzzer, tmp_path):
    exe, ext = fuzzer
    gen = tiny_gguf_generator()
    seeds = [ROOT / "tests" / "fixtures" / "tiny" / "tiny.gguf"]
    seeds += [gen.make_variant(tmp_path / f"{v}.gguf", v) for v in VARIANTS]
    env = dict(os.environ, OPENVINO_TOKENIZERS_PATH_GENAI=str(ext),
               ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:exitcode=99:verify_asan_link_order=0:"
                            "detect_odr_violation=0:alloc_dealloc_mismatch=0",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    proc = subprocess.run([str(exe), str(tmp_path / "case.gguf"), str(CASES), str(SEED), *map(str, seeds)],
                          capture_output=True, text=True, timeout=1500, env=env)
    lines = proc.stdout.splitlines()
    last_case = next((line for line in reversed(lines) if line.startswith("case ")), "before the first case")
    assert proc.returncode == 0, f"{last_case} (seed {SEED}) ended with {proc.returncode}:\n{proc.stderr[-6000:]}"
    done = lines[-1].split()
    assert done[0] == "done" and int(done[1]) == CASES, lines[-3:]
    built, refused = int(done[2]), int(done[3])
    # both outcomes occur: the damage is neither always fatal nor always harmless
    assert built > CASES // 50 and refused > CASES // 4, (built, refused)
