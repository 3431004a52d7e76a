"""ovgenai_c on another Python (PyPy): the same code over the same bundled backend gives the same tokens, streams the
same chunks and raises the same errors as on this interpreter. Driven from here; ``OVGENAI_C_OTHER_PYTHON`` names the
other interpreter, with ovgenai_c installed in its environment (scripts/install_pypy.sh; the test command's PyPy part
sets it). Without it these tests skip. Each side runs the same probe in a child process, from a folder outside the
source tree, so each imports its own installed copy."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

OTHER = os.environ.get("OVGENAI_C_OTHER_PYTHON")
pytestmark = pytest.mark.skipif(not OTHER, reason="OVGENAI_C_OTHER_PYTHON is not set (scripts/install_pypy.sh makes "
                                                  "such an interpreter; scripts/test.sh's PyPy part sets it)")
TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "ir"

PROBE = textwrap.dedent("""
    import json, sys
    import ovgenai_c as ov_genai
    from ovgenai_c import errors
    model = sys.argv[1]
    out = {"implementation": sys.implementation.name, "package": ov_genai.__file__}
    with ov_genai.LLMPipeline(model, "CPU") as pipe:
        out["library"] = ov_genai.library_info()["kind"]
        prompts = ["What is the capital of France?", "Write a haiku about the sea.", "1, 2, 3, 4,"]
        out["greedy"] = [str(pipe.generate(p, max_new_tokens=24)) for p in prompts]
        res = pipe.generate(prompts[0], max_new_tokens=12)
        out["tokens"] = res.perf_metrics.get_num_generated_tokens()
        out["finish"] = res.finish_reason
        out["chunks"] = list(pipe.stream(prompts[1], max_new_tokens=16))
        history = ov_genai.ChatHistory()
        replies = []
        for turn in ("Hi, who are you?", "Tell me more."):
            history.append({"role": "user", "content": turn})
            reply = pipe.generate(history, max_new_tokens=16)
            replies.append(reply.texts[0])
            history.append({"role": "assistant", "content": reply.texts[0]})
        out["chat"] = replies
        cfg = ov_genai.GenerationConfig(max_new_tokens=8, do_sample=True, top_k=5, rng_seed=7)
        out["seeded"] = str(pipe.generate(prompts[2], cfg))
        try:
            pipe.generate(prompts[0], max_new_tokens=4, temperature=-1.0, do_sample=True)
        except errors.GenAIError as exc:
            out["refused"] = [type(exc).__name__, str(exc)]
    try:
        pipe.generate("x", max_new_tokens=2)
    except errors.PipelineClosedError as exc:
        out["closed"] = type(exc).__name__
    print(json.dumps(out))
""")


WHISPER_PROBE = textwrap.dedent("""
    import json, sys
    import ovgenai_c as ov_genai
    from ovgenai_c.audio import read_wav
    samples = read_wav(sys.argv[2])
    with ov_genai.WhisperPipeline(sys.argv[1], "CPU") as pipe:
        plain = pipe.generate(samples)
        timed = pipe.generate(samples, return_timestamps=True)
    print(json.dumps({"implementation": sys.implementation.name, "text": str(plain), "texts": list(plain.texts),
                      "chunks": [[c.start_ts, c.end_ts, c.text] for c in (timed.chunks or [])]}))
""")


def _probe(python: str, model: Path, cwd: Path, *more: str, code: str = PROBE) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OVGENAI_C_LIBRARY", "OPENVINO_GENAI_DIR")}
    proc = subprocess.run([python, "-c", code, str(model), *more], capture_output=True, text=True, cwd=str(cwd),
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _models() -> list:
    found = [TINY]
    from ovgenai_c import models

    if models.default_model_status().get("ir_present"):
        found.append(models.default_model_dir() / "ir")
    return found


@pytest.mark.parametrize("model", _models(), ids=lambda p: p.parent.name)
def test_the_other_interpreter_answers_as_this_one(model, tmp_path):
    if not (model / "openvino_model.xml").is_file():
        pytest.skip(f"no model at {model}")
    here = _probe(sys.executable, model, tmp_path)
    there = _probe(OTHER, model, tmp_path)
    assert there["implementation"] != here["implementation"] or OTHER == sys.executable
    assert Path(there["package"]).resolve() != Path(__file__).resolve().parents[2] / "ovgenai_c" / "__init__.py"
    assert there["library"] == here["library"] == "bundled"
    for key in ("greedy", "tokens", "finish", "chunks", "chat", "seeded", "refused", "closed"):
        assert there[key] == here[key], key
    assert "".join(there["chunks"]) and len(there["chunks"]) > 1  # streamed piece by piece, not one block
    assert there["refused"][0] == "ConfigError" and "temperature" in there["refused"][1]


def test_whisper_transcribes_on_the_other_interpreter_as_on_this_one(tmp_path):
    """WhisperPipeline over the bundled backend: the same text and timestamped chunks (16 kHz speech: soxr and scipy,
    the resamplers, publish no PyPy wheels)."""
    from ovgenai_c import whisper_models

    status = whisper_models.whisper_model_status("whisper-tiny.en")
    if not status["ready"]:
        pytest.skip(f"whisper-tiny.en is not converted here ({status['ir']}; tests/whisper makes it)")
    espeak, sox = shutil.which("espeak-ng"), shutil.which("sox")
    if espeak is None or sox is None:
        pytest.skip("espeak-ng and sox make the speech (apt-get install espeak-ng sox)")
    raw, wav = tmp_path / "raw.wav", tmp_path / "speech16k.wav"
    subprocess.run([espeak, "-w", str(raw), "The quick brown fox jumps over the lazy dog. It was a sunny day."],
                   check=True, capture_output=True, timeout=60)
    subprocess.run([sox, str(raw), "-r", "16000", str(wav)], check=True, capture_output=True, timeout=60)
    here = _probe(sys.executable, Path(status["ir"]), tmp_path, str(wav), code=WHISPER_PROBE)
    there = _probe(OTHER, Path(status["ir"]), tmp_path, str(wav), code=WHISPER_PROBE)
    assert there["implementation"] != here["implementation"] or OTHER == sys.executable
    assert "fox" in there["text"].lower() and there["chunks"]
    assert {k: there[k] for k in ("text", "texts", "chunks")} == {k: here[k] for k in ("text", "texts", "chunks")}


def test_the_other_interpreter_converts_a_gguf_itself(tmp_path):
    """GGUF -> IR needs no CPython extension any more: the other interpreter's ovgenai_c writes, with the bundled
    backend, the IR real GenAI wrote for the tiny model (tests/fixtures/tiny/ir), byte for byte in every .bin, and
    runs the GGUF itself with the same answers as this interpreter."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OVGENAI_C_LIBRARY", "OPENVINO_GENAI_DIR")}
    out = tmp_path / "ir"
    r = subprocess.run([OTHER, "-m", "ovgenai_c.gguf_ir", str(TINY.parent / "tiny.gguf"), str(out)],
                       capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("openvino_model.bin", "openvino_tokenizer.bin", "openvino_detokenizer.bin"):
        assert (out / name).read_bytes() == (TINY / name).read_bytes(), name
    # (the GGUF on both sides: its IR holds the f32 constants as f16, and an F16 model's answers part from it)
    here = _probe(sys.executable, TINY.parent / "tiny.gguf", tmp_path)
    there = _probe(OTHER, TINY.parent / "tiny.gguf", tmp_path)
    assert there["implementation"] != here["implementation"] or OTHER == sys.executable
    assert there["greedy"] == here["greedy"] and there["chat"] == here["chat"]


def test_the_main_job_runs_on_the_other_interpreter(tmp_path):
    """README's command 1 without the install: `ovgenai-c generate` in the other interpreter's environment gives the
    answer this one gives (the default model converted, if it is not yet, by the bundled backend: no CPython
    extension involved)."""
    cli = Path(OTHER).parent / "ovgenai-c"
    if not cli.is_file():
        pytest.skip(f"no ovgenai-c beside {OTHER}")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OVGENAI_C_LIBRARY", "OPENVINO_GENAI_DIR",
                                                            "OVGENAI_C_CONVERT_PYTHON")}
    question = "What is the capital of France?"
    there = subprocess.run([str(cli), "generate", question], capture_output=True, text=True, cwd=str(tmp_path),
                           env=env, timeout=900)
    assert there.returncode == 0, there.stderr[-3000:]
    here = subprocess.run([sys.executable, "-m", "ovgenai_c", "generate", question], capture_output=True, text=True,
                          cwd=str(tmp_path), env=env, timeout=900)
    assert here.returncode == 0, here.stderr[-3000:]
    assert there.stdout.strip() and there.stdout == here.stdout
