"""GGUF files loaded directly by the bundled backend (``ovgenai_c.LLMPipeline("x.gguf", "CPU")``), against real
OpenVINO GenAI 2026.4 (the oracle), which loads llama / qwen2 / qwen3 GGUFs with F16, Q4_0, Q4_1, Q8_0, Q4_K and
Q6_K matrices (norms F32).

The models are made here, per session, by scripts/make_tiny_gguf.py (tiny random models whose greedy text is varied
and never reaches a special token; its VARIANTS cover every architecture and matrix type, token_embd in F16 and
quantized, the LM head separate and tied, and three pre-tokenizers: smollm, qwen2 and GenAI's default regex).

* per variant: greedy text (prompt as is, and templated as GenAI's generate() does by default), token ids from token
  input, a ChatHistory turn, and the tokenizer (encode / decode / chat template / special ids) equal GenAI's on the
  same GGUF;
* per variant: the IR GenAI writes from the GGUF (enable_save_ov_model=True) gives the bundled backend GenAI's own
  tokens on that IR, and the GGUF the same tokens as that IR wherever GenAI's GGUF and IR agree (they do not for
  F16 models: GenAI's IR of an F16 GGUF stores the small f32 constants — RoPE frequencies among them — as f16 and
  marks the weight converts as decompression, and then gives other tokens than its GGUF; its IR of a quantized GGUF
  keeps them f32 and agrees);
* malformed files (truncated, garbage after the magic, no magic, unknown architecture, unsupported tensor types,
  a missing key or tensor) raise a GenAIError naming the problem, in a child process (a crash or hang fails);
* SmolLM2-135M-Instruct's Q4_1 GGUF (when cached): bundled GGUF == GenAI GGUF == bundled IR.

GenAI runs in one child process for all variants (it crashes on some malformed files; and its outputs are computed
once). Both sides run under INFERENCE_PRECISION_HINT=f32 (the CPU plugin's default is bf16 on AMX CPUs) and the same
attention engine (the bundled default — OVGENAI_C_BUNDLED_ATTENTION_BACKEND, else PA — and GenAI's default CPU
pipeline, PA, or ATTENTION_BACKEND=SDPA for SDPA).
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from helpers import default_backend, tiny_gguf_generator
from testsupport import PRECISION_HINT, bundled_library_path

pytest.importorskip("openvino_genai", reason="openvino_genai (test oracle) not installed")
pytest.importorskip("gguf", reason="the gguf package (fixture generator) not installed")

REPO = pathlib.Path(__file__).resolve().parents[2]




make_tiny_gguf = tiny_gguf_generator()

VARIANTS = list(make_tiny_gguf.VARIANTS)
MAX_NEW = 24
PROMPTS = ["The quick brown fox", "Hello, world! 中文 é 🙂", "What is 2+2? Answer briefly."]
HISTORY = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a color."}]
TOKENIZER_STRINGS = [
    "Hello, world!", "The quick brown fox jumps over the lazy dog.", "  leading and trailing  ",
    "tabs\tand\nnewlines\r\n\n", "I'm sure they'll say we've done it, didn't they?", "12345 + 678 = 13023",
    "中文 é 🙂 ñandú αβγ", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "a<|im_end|>b<|endoftext|>",
    "!!!???... ,,;; $$ ^^ ~~ ||", "def f(x):\n    return x ** 2  # square\n", "x" * 40,
    "HE'LL say DON'T: $var (paren)word .NET #tag\n\n\n  end.\r\n", "3.14159 1,000,000 2024-12-07 x2 99bottles",
]
DECODE_ROWS = [[1, 504, 613, 901, 2], [0, 17, 18, 19, 200, 300, 1023], list(range(17, 60)), [300, 2, 301, 5, 302],
               [700, 156, 190, 222]]
CHAT = [{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye 🙂"}]

SMOL_DIR = pathlib.Path(os.environ.get("OVGENAI_C_CACHE", pathlib.Path.home() / ".cache" / "ovgenai_c")) / \
    "models" / "SmolLM2-135M-Instruct"
SMOL_GGUF = SMOL_DIR / "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_IR = SMOL_DIR / "ir"
SMOL_PROMPTS = ["What is the capital of France?", "Write a haiku about the sea.", "List three prime numbers.",
                "Tell me a joke about cats."]
SMOL_NEW = 32

# the refusals before the loader existed (the binding's check, then the library's)
PRE_LOADER = ("loads OpenVINO IR folders", "reads OpenVINO IR only")


def _oracle_props() -> dict:
    props = dict(PRECISION_HINT)
    if default_backend() != "PA":
        props["ATTENTION_BACKEND"] = "SDPA"
    return props


# ---- the oracle (GenAI, in one child process) ------------------------------------------------------------------
_ORACLE = r"""
import json, os, shutil, sys, traceback
import numpy as np
import openvino as ov
import openvino_genai as g

spec = json.load(open(sys.argv[1], encoding="utf-8"))
props = spec["props"]


def text_case(pipe, prompt, templated):
    cfg = g.GenerationConfig(max_new_tokens=spec["max_new"], apply_chat_template=templated)
    r = pipe.generate([prompt], cfg)  # (a list: DecodedResults; a str gives a str)
    pm = r.perf_metrics
    return {"text": r.texts[0], "num_input": int(pm.get_num_input_tokens()),
            "num_generated": int(pm.get_num_generated_tokens())}


def token_inputs(tok):
    out = []
    for prompt in spec["prompts"]:
        for templated in (False, True):
            text = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True) \
                if templated else prompt
            ids = [int(t) for t in tok.encode(text, add_special_tokens=False).input_ids.data[0]]
            out.append({"prompt": prompt, "templated": templated, "input_ids": ids})
    return out


def token_cases(pipe, inputs):
    cfg = g.GenerationConfig(max_new_tokens=spec["max_new"], apply_chat_template=False)
    return [dict(c, output_ids=[int(t) for t in pipe.generate(ov.Tensor(np.array([c["input_ids"]], np.int64)),
                                                              cfg).tokens[0]]) for c in inputs]


def tokenizer_cases(tok):
    enc = {}
    for s in spec["strings"]:
        enc[s] = {str(add): [int(t) for t in tok.encode(s, add_special_tokens=add).input_ids.data[0]]
                  for add in (True, False)}
    dec = {str(skip): [tok.decode(row, skip_special_tokens=skip) for row in spec["decode_rows"]]
           for skip in (True, False)}
    rt = {s: tok.decode(v["False"]) for s, v in enc.items()}
    return {"encode": enc, "decode": dec, "roundtrip": rt,
            "chat": tok.apply_chat_template(spec["chat"], add_generation_prompt=True),
            "bos": int(tok.get_bos_token_id()), "eos": int(tok.get_eos_token_id()), "pad": int(tok.get_pad_token_id())}


for name, v in spec["variants"].items():
    out = {"variant": name}
    try:
        pipe = g.LLMPipeline(v["gguf"], "CPU", **props)
        tok = pipe.get_tokenizer()
        out["text"] = [dict(prompt=p, templated=t, **text_case(pipe, p, t))
                       for p in spec["prompts"] for t in (False, True)]
        inputs = token_inputs(tok)
        out["tokens"] = token_cases(pipe, inputs)
        # a fresh pipeline: GenAI 2026.4.1's stateful (SDPA) pipeline fails a ChatHistory call made after a plain
        # generate() on it ("Check 'token_idx < seq_len' failed", or other text)
        hist = g.LLMPipeline(v["gguf"], "CPU", **props)
        r = hist.generate(g.ChatHistory(spec["history"]), g.GenerationConfig(max_new_tokens=spec["max_new"]))
        out["history"] = r.texts[0]
        del hist
        if spec["tokenizer"]:
            out["tokenizer"] = tokenizer_cases(tok)
        del tok, pipe
        if v.get("ir_dir"):
            ir = v["ir_dir"]
            os.makedirs(ir, exist_ok=True)
            copy = os.path.join(ir, "model.gguf")
            shutil.copyfile(v["gguf"], copy)
            saver = g.LLMPipeline(copy, "CPU", enable_save_ov_model=True, **props)
            del saver
            os.remove(copy)  # the folder is an IR folder now
            irpipe = g.LLMPipeline(ir, "CPU", **props)
            out["ir_tokens"] = token_cases(irpipe, inputs)  # the same input ids
            del irpipe
    except Exception:
        out["error"] = traceback.format_exc()
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    sys.stdout.flush()
"""


def run_oracle(variants: dict, work: pathlib.Path, prompts=PROMPTS, max_new=MAX_NEW, tokenizer=True,
               timeout=900) -> dict:
    """GenAI's outputs per variant ({name: {"gguf": path, "ir_dir": folder or None}}), from one child process;
    a variant the child did not finish (it died) maps to {"error": ...}."""
    spec = {"variants": variants, "props": _oracle_props(), "prompts": prompts, "max_new": max_new,
            "history": HISTORY, "tokenizer": tokenizer, "strings": TOKENIZER_STRINGS, "decode_rows": DECODE_ROWS,
            "chat": CHAT}
    spec_path = work / "oracle_spec.json"
    spec_path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", _ORACLE, str(spec_path)], capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    got = {}
    for line in proc.stdout.decode("utf-8").splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            got[d["variant"]] = d
    tail = proc.stderr.decode("utf-8", "replace")[-3000:]
    for name in variants:
        if name not in got:
            got[name] = {"error": f"the oracle child (exit {proc.returncode}) gave nothing for {name}:\n{tail}"}
    return got


@pytest.fixture(scope="module")
def bundled_lib() -> str:
    p = bundled_library_path()
    if p is None or not pathlib.Path(p).is_file():
        pytest.skip("bundled backend not built (scripts/build_backend.sh)")
    return str(p)


@pytest.fixture(scope="module")
def gguf_dir(tmp_path_factory) -> pathlib.Path:
    """Every VARIANT as <name>.gguf (about 5 s)."""
    d = tmp_path_factory.mktemp("gguf_variants")
    for name in VARIANTS:
        make_tiny_gguf.make_variant(d / f"{name}.gguf", name)
    return d


@pytest.fixture(scope="module")
def oracle(gguf_dir) -> dict:
    spec = {name: {"gguf": str(gguf_dir / f"{name}.gguf"), "ir_dir": str(gguf_dir / f"ir_{name}")}
            for name in VARIANTS}
    return run_oracle(spec, gguf_dir)


def _oracle_of(oracle: dict, name: str) -> dict:
    got = oracle[name]
    if "error" in got:
        pytest.fail(f"openvino_genai (the oracle) failed on {name}:\n{got['error']}")
    return got


def _open(path, lib: str):
    """ovgenai_c.LLMPipeline(path) on the bundled backend, or the exception it raised."""
    import ovgenai_c

    try:
        return ovgenai_c.LLMPipeline(str(path), "CPU", library=lib, **PRECISION_HINT)
    except Exception as exc:  # reported by the tests that use it (a failure, not a setup error)
        return exc


def _need(pipe_or_exc, what: str):
    if isinstance(pipe_or_exc, BaseException):
        pytest.fail(f"ovgenai_c.LLMPipeline({what}) raised {type(pipe_or_exc).__module__}."
                    f"{type(pipe_or_exc).__name__}: {pipe_or_exc}")
    return pipe_or_exc


@pytest.fixture(scope="module", params=VARIANTS)
def variant(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def gguf_pipe(variant, gguf_dir, bundled_lib):
    p = _open(gguf_dir / f"{variant}.gguf", bundled_lib)
    yield p
    if not isinstance(p, BaseException):
        p.close()


@pytest.fixture(scope="module")
def ir_pipe(variant, gguf_dir, bundled_lib, oracle):
    _oracle_of(oracle, variant)  # (the IR folder is the oracle's)
    p = _open(gguf_dir / f"ir_{variant}", bundled_lib)
    yield p
    if not isinstance(p, BaseException):
        p.close()


def _token_outputs(pipe, cases) -> list:
    return [[int(t) for t in pipe.generate(np.array([c["input_ids"]], dtype=np.int64),
                                           max_new_tokens=MAX_NEW).tokens[0]] for c in cases]


# ---- the fixtures themselves -------------------------------------------------------------------------------------
def test_fixture_generation_is_deterministic_and_quick(tmp_path):
    import time

    t0 = time.monotonic()
    a = make_tiny_gguf.make_variant(tmp_path / "a.gguf", "qwen3-mixed-tied")
    b = make_tiny_gguf.make_variant(tmp_path / "b.gguf", "qwen3-mixed-tied")
    assert a.read_bytes() == b.read_bytes()
    assert time.monotonic() - t0 < 10
    c = make_tiny_gguf.make_variant(tmp_path / "c.gguf", "qwen3-mixed-tied", seed=1)
    assert c.read_bytes() != a.read_bytes()


@pytest.mark.parametrize("qtype", ["Q4_K", "Q6_K"])
def test_hand_written_k_quants_decode_as_llama_cpp_reads_them(qtype):
    """Our Q4_K / Q6_K blocks, read back by gguf.quants (llama.cpp's layouts), give the weights within the
    quantization step."""
    w = np.random.default_rng(3).standard_normal((16, 512)).astype(np.float32)
    raw, _ = make_tiny_gguf.quantize(w, qtype)
    assert raw.shape == (16, 512 // 256 * (144 if qtype == "Q4_K" else 210))
    back = make_tiny_gguf.dequantize(raw, qtype)
    err = np.sqrt(((back - w) ** 2).mean()) / w.std()
    assert err < (0.1 if qtype == "Q4_K" else 0.03), err


def test_oracle_output_is_nontrivial(variant, oracle):
    """GenAI loads every variant and its greedy text runs to max_new_tokens, varied, without special tokens."""
    got = _oracle_of(oracle, variant)
    for case in got["tokens"] + got["ir_tokens"]:
        out = case["output_ids"]
        assert len(out) == MAX_NEW, case
        assert len(set(out)) >= MAX_NEW // 2, case
        assert min(out) >= make_tiny_gguf.N_SPECIAL, case
    assert all(c["num_generated"] == MAX_NEW and c["text"].strip() for c in got["text"])


# ---- the bundled backend on GGUF against GenAI ---------------------------------------------------------------------
def test_token_ids_match_genai(variant, gguf_pipe, oracle):
    got = _oracle_of(oracle, variant)
    pipe = _need(gguf_pipe, f"{variant}.gguf")
    assert _token_outputs(pipe, got["tokens"]) == [c["output_ids"] for c in got["tokens"]]


def test_text_matches_genai(variant, gguf_pipe, oracle):
    """Prompt as is and templated (generate()'s default, with the GGUF's chat template)."""
    got = _oracle_of(oracle, variant)
    pipe = _need(gguf_pipe, f"{variant}.gguf")
    for case in got["text"]:
        r = pipe.generate(case["prompt"], max_new_tokens=MAX_NEW, apply_chat_template=case["templated"])
        assert (str(r), r.perf_metrics.get_num_input_tokens(), r.perf_metrics.get_num_generated_tokens()) == \
            (case["text"], case["num_input"], case["num_generated"]), case


def test_chat_history_matches_genai(variant, gguf_pipe, oracle):
    got = _oracle_of(oracle, variant)
    pipe = _need(gguf_pipe, f"{variant}.gguf")
    assert str(pipe.generate(HISTORY, max_new_tokens=MAX_NEW)) == got["history"]


def test_tokenizer_matches_genai(variant, gguf_pipe, oracle):
    want = _oracle_of(oracle, variant)["tokenizer"]
    tok = _need(gguf_pipe, f"{variant}.gguf").get_tokenizer()
    for s, by_flag in want["encode"].items():
        for flag, ids in by_flag.items():
            got = [int(t) for t in np.asarray(tok.encode(s, add_special_tokens=flag == "True").input_ids.data)[0]]
            assert got == ids, (s, flag)
        assert tok.decode(by_flag["False"]) == want["roundtrip"][s], s
    for flag, texts in want["decode"].items():
        assert [tok.decode(row, skip_special_tokens=flag == "True") for row in DECODE_ROWS] == texts, flag
    assert tok.apply_chat_template(CHAT, add_generation_prompt=True) == want["chat"]
    assert (tok.get_bos_token_id(), tok.get_eos_token_id(), tok.get_pad_token_id()) == \
        (want["bos"], want["eos"], want["pad"])


def test_saved_ir_agrees_with_gguf(variant, gguf_pipe, ir_pipe, oracle):
    """The IR GenAI writes from the GGUF: the bundled backend gives GenAI's tokens on it, and on the GGUF the same
    tokens as on the IR wherever GenAI's own GGUF and IR agree (all quantized variants; see the module doc)."""
    got = _oracle_of(oracle, variant)
    ir = _need(ir_pipe, f"the IR GenAI wrote from {variant}.gguf")
    on_ir = _token_outputs(ir, got["ir_tokens"])
    assert on_ir == [c["output_ids"] for c in got["ir_tokens"]], "bundled IR != GenAI IR"
    on_gguf = _token_outputs(_need(gguf_pipe, f"{variant}.gguf"), got["tokens"])
    genai_agrees = [c["output_ids"] for c in got["ir_tokens"]] == [c["output_ids"] for c in got["tokens"]]
    if genai_agrees:
        assert on_gguf == on_ir
    else:
        assert make_tiny_gguf.VARIANTS[variant]["weight_type"] == "F16", \
            "GenAI's own GGUF and IR disagree on a quantized variant"
        assert on_gguf == [c["output_ids"] for c in got["tokens"]]


# ---- malformed files ------------------------------------------------------------------------------------------------
_CHILD = r"""
import json, sys
import ovgenai_c
out = {}
try:
    p = ovgenai_c.LLMPipeline(sys.argv[1], "CPU", library=sys.argv[2], INFERENCE_PRECISION_HINT="f32")
    out["loaded"] = True
    try:
        out["text"] = str(p.generate("Hi", max_new_tokens=4))
    except Exception as exc:
        out["generate_error"] = repr(exc)
except Exception as exc:
    out = {"type": type(exc).__name__, "mro": [c.__name__ for c in type(exc).__mro__], "message": str(exc)}
print(json.dumps(out))
"""

_TRUNCATED = r"truncat|ends? (early|past|before)|end of (the )?file|past the end|too (short|small)|incomplete"
_GARBAGE = r"not a valid|invalid|corrupt|malformed|impossible|implausible|too (large|many|big)|exceed|" \
           r"out of (range|bounds)|unsupported"

BAD_CASES = {
    # name: (how to make it, a regex the message must match, words it must contain)
    "truncated-data": (lambda d, p: make_tiny_gguf.truncated_copy(d / "llama-q4_k.gguf", p, 0.6), _TRUNCATED, []),
    "truncated-metadata": (lambda d, p: make_tiny_gguf.truncated_copy(d / "llama-q4_k.gguf", p, 0.002),
                           _TRUNCATED, []),
    "garbage-after-magic": (lambda d, p: make_tiny_gguf.garbage_gguf(p), _GARBAGE, []),
    "no-magic": (lambda d, p: p.write_bytes(b"not a gguf file at all\n" * 200), r"magic|not a GGUF", ["GGUF"]),
    "architecture-phi3": (lambda d, p: make_tiny_gguf.make_gguf(p, "llama", "Q8_0", arch_name="phi3"),
                          r"(?i)architecture", ["phi3"]),
    "tensor-type-Q5_0": (lambda d, p: make_tiny_gguf.make_gguf(p, "llama", {"ffn_down": "Q5_0", "attn_q": "Q8_0"},
                                                               file_type=8), r".", ["Q5_0"]),
    "tensor-type-Q2_K": (lambda d, p: make_tiny_gguf.make_gguf(p, "llama", "Q2_K", embed_type="F16",
                                                               output_type="F16"), r".", ["Q2_K"]),
    # GenAI refuses F32 projections ("Unsupported quantization type"); F32 stays fine for norms and tables
    "tensor-type-F32-projection": (lambda d, p: make_tiny_gguf.make_gguf(p, "llama", {"attn_v": "F32"}, file_type=1),
                                   r"projection weights", ["F32", "blk.0.attn_v.weight"]),
    # tensors that disagree with the metadata: refused naming the tensor, before anything is built
    "shape-disagrees": (lambda d, p: make_tiny_gguf.make_gguf(p, "llama", "Q8_0",
                                                              int_overrides={"llama.attention.head_count_kv": 4}),
                        r"has the shape \[256, 128\].*needs \[256, 256\]", ["blk.0.attn_k.weight"]),
    "missing-key": (lambda d, p: make_tiny_gguf.make_gguf(p, "llama", "Q8_0", omit_keys=["llama.block_count"]),
                    r".", ["llama.block_count"]),
    "missing-architecture": (lambda d, p: make_tiny_gguf.make_gguf(p, "llama", "Q8_0",
                                                                   omit_keys=["general.architecture"]),
                             r".", ["general.architecture"]),
    "missing-tensor": (lambda d, p: make_tiny_gguf.make_gguf(p, "llama", "Q8_0",
                                                             omit_tensors=["blk.1.ffn_down.weight"]),
                       r".", ["blk.1.ffn_down.weight"]),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_malformed_gguf_raises_a_clear_error(case, gguf_dir, bundled_lib, tmp_path_factory):
    make, pattern, words = BAD_CASES[case]
    path = tmp_path_factory.mktemp("case") / "m.gguf"  # (a neutral path: the message names it, the checks skip it)
    make(gguf_dir, path)
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(path), bundled_lib], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL, cwd=str(REPO),
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])})
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: loading hung (no answer in 120 s)")
    if proc.returncode != 0:
        pytest.fail(f"{case}: the child exited {proc.returncode} (a crash?)\n{(proc.stdout + proc.stderr)[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not out.get("loaded"), f"{case}: the malformed file loaded: {out}"
    msg = out["message"].replace(str(path), "<file>")
    assert "GenAIError" in out["mro"], out
    assert not any(w in msg for w in PRE_LOADER), f"{case}: refused as any GGUF is, not by a loader: {msg}"
    assert re.search(pattern, msg, re.I), f"{case}: unclear message: {msg}"
    for w in words:
        assert w in msg, f"{case}: the message does not name {w!r}: {msg}"
    assert "unordered_map::at" not in msg and len(msg) < 2000, msg


# ---- the real model ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def smol_oracle(tmp_path_factory) -> dict:
    if not SMOL_GGUF.is_file():
        pytest.skip(f"{SMOL_GGUF} not present (fetched by `ovgenai-c generate` / ovgenai_c.models)")
    got = run_oracle({"smol": {"gguf": str(SMOL_GGUF), "ir_dir": None}}, tmp_path_factory.mktemp("smol_oracle"),
                     prompts=SMOL_PROMPTS, max_new=SMOL_NEW, tokenizer=False)["smol"]
    if "error" in got:
        pytest.fail(f"openvino_genai (the oracle) failed on {SMOL_GGUF}:\n{got['error']}")
    return got


def test_smollm2_q4_1_gguf_matches_genai_and_its_ir(smol_oracle, bundled_lib):
    """4 prompts (templated) x 32 tokens: bundled GGUF == GenAI GGUF == bundled IR (the cached conversion, when
    present), token ids from token input and text from the prompt."""
    cases = [c for c in smol_oracle["tokens"] if c["templated"]]
    want = [c["output_ids"] for c in cases]
    texts = [c["text"] for c in smol_oracle["text"] if c["templated"]]
    models = [(SMOL_IR, "bundled IR")] if (SMOL_IR / "openvino_model.xml").is_file() else []
    for model, what in models + [(SMOL_GGUF, "bundled GGUF")]:
        pipe = _need(_open(model, bundled_lib), str(model))
        try:
            assert _token_outputs_n(pipe, cases, SMOL_NEW) == want, f"{what} != GenAI GGUF"
            assert [str(pipe.generate(p, max_new_tokens=SMOL_NEW)) for p in SMOL_PROMPTS] == texts, what
        finally:
            pipe.close()


def _token_outputs_n(pipe, cases, n) -> list:
    return [[int(t) for t in pipe.generate(np.array([c["input_ids"]], dtype=np.int64),
                                           max_new_tokens=n).tokens[0]] for c in cases]
