#!/usr/bin/env python3
"""Make small deterministic GGUF models for the bundled backend's GGUF loader tests (tests/backend/test_gguf_load.py).

    from make_tiny_gguf import make_gguf, VARIANTS
    make_gguf(tmp / "m.gguf", arch="qwen2", weight_type="Q4_K_M", seed=1)
    make_gguf(tmp / "m.gguf", **VARIANTS["llama-q4_1-tied"])

What a file holds
  * an ``llama``, ``qwen2`` or ``qwen3`` model: hidden 256, 2 layers, 4 heads / 2 KV heads, head dim 64 (qwen3:
    128, written as ``qwen3.attention.key_length``, so q/o are 512 wide), FFN 512, vocabulary 1024;
    qwen2 has q/k/v biases (``blk.N.attn_{q,k,v}.bias``, F32), qwen3 ``blk.N.attn_{q,k}_norm.weight`` (F32);
  * random weights from ``numpy.random.default_rng(seed)``, quantized as asked: F16, F32 (matrices too), Q4_0,
    Q4_1, Q8_0, Q5_0 (those four by ``gguf.quants``), Q4_K, Q6_K (quantized here, real llama.cpp block layouts,
    checked against ``gguf.quants.dequantize``) and Q2_K (random bytes: only for "unsupported type" tests); norms
    (and qwen2's biases) are always F32, with values f16 represents exactly, and the RMS epsilons are powers of two
    (2^-17, 2^-20), so the IR GenAI writes with enable_save_ov_model (small f32 constants stored as f16) keeps them;
    no block is all zeros (GenAI divides by block scales); F32 matrices and Q5_0 / Q2_K are types GenAI refuses;
  * ``token_embd`` in its own type (``embed_type``) and either a separate ``output.weight`` (``output_type``) or
    none (tied embeddings, ``output_type="tied"``);
  * the tokenizer of tests/fixtures/tiny/tiny.gguf (1024 tokens of SmolLM2's byte-level BPE, its merges, specials
    and ChatML template; pre-tokenizer ``smollm`` for llama, ``qwen2`` for the qwen architectures unless
    ``tokenizer_pre`` says otherwise) and the metadata GenAI's reader needs (``general.architecture``,
    ``general.file_type``, ``<arch>.block_count``, ``.embedding_length``, ``.feed_forward_length``,
    ``.context_length``, ``.attention.head_count``, ``.attention.head_count_kv``,
    ``.attention.layer_norm_rms_epsilon``, ``.rope.freq_base``, ``tokenizer.ggml.*``, ``tokenizer.chat_template``).

Like scripts/make_tiny_model.py, the init is shaped so that greedy decoding never emits a special token (nor an
unprintable control byte) and gives varied text: residual dimension 0 is a "carrier" (+CARRIER in every token's
embedding) that the blocks barely write to (their output rows 0 are 100x smaller), and column 0 of the LM head is
+CARRIER for ordinary tokens and -CARRIER for the suppressed ones (with ``output_norm.weight[0]`` = CARRIER_GAIN);
with tied embeddings the suppressed tokens' own embeddings carry -CARRIER. The carrier is the largest value of its
quantization block, so every block type represents it (nearly) exactly and the gap survives quantization (the
attention and FFN widths are scaled so that the text of every VARIANT stays varied; qwen3's q/k norm weights are ~3).

Same arguments -> byte-identical file. Generation takes about half a second per file (mostly gguf.quants).

Also for malformed-input tests: ``omit_keys`` (metadata keys left out), ``omit_tensors`` (tensors left out),
``arch_name`` (the ``general.architecture`` written — and the prefix of the per-architecture keys — when it should
differ from ``arch``, e.g. "phi3"), and :func:`truncated_copy` / :func:`garbage_gguf`.

CLI: python scripts/make_tiny_gguf.py OUT.gguf [--arch llama] [--weight-type Q4_K_M] [--embed-type Q8_0]
     [--output-type tied] [--seed N]        or        python scripts/make_tiny_gguf.py --all OUTDIR
Needs numpy and gguf (pip install gguf).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Dict, Iterable, Mapping, Optional, Union

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_tiny_model import _gpt2_byte_of  # noqa: E402  (the tiny model's GPT-2 byte table, shared)
TINY_GGUF = REPO / "tests" / "fixtures" / "tiny" / "tiny.gguf"  # the vocabulary's source (committed)

DEFAULT_SEED = 20261207
VOCAB = 1024
N_SPECIAL = 17
HIDDEN = 256
LAYERS = 2
HEADS = 4
KV_HEADS = 2
HEAD_DIM = {"llama": 64, "qwen2": 64, "qwen3": 128}
FFN = 512
CONTEXT = {"llama": 2048, "qwen2": 4096, "qwen3": 4096}
ROPE_BASE = {"llama": 10000.0, "qwen2": 1000000.0, "qwen3": 1000000.0}
RMS_EPS = {"llama": 2.0 ** -17, "qwen2": 2.0 ** -20, "qwen3": 2.0 ** -20}  # ~7.6e-6 / ~9.5e-7, exact in f16
BOS, EOS, PAD, UNK = 1, 2, 2, 0
CARRIER = 4.0        # the carrier's value in the embeddings and the LM head's column 0 (+/-)
CARRIER_GAIN = 50.0  # output_norm.weight[0]
ARCHS = ("llama", "qwen2", "qwen3")

# matrix roles of a layer, in GGUF names
LAYER_MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")

# whole-model presets: role -> type (roles: the layer matrices, "token_embd", "output")
PRESETS: Dict[str, Dict[str, str]] = {
    # like llama.cpp's Q4_K_M: attn_v and ffn_down one step up, the LM head in Q6_K
    "Q4_K_M": {"attn_q": "Q4_K", "attn_k": "Q4_K", "attn_v": "Q6_K", "attn_output": "Q4_K", "ffn_gate": "Q4_K",
               "ffn_up": "Q4_K", "ffn_down": "Q6_K", "token_embd": "Q4_K", "output": "Q6_K"},
    # a mix of all five block types GenAI reads
    "MIXED": {"attn_q": "Q4_0", "attn_k": "Q4_1", "attn_v": "Q8_0", "attn_output": "Q4_K", "ffn_gate": "Q6_K",
              "ffn_up": "Q4_1", "ffn_down": "Q8_0", "token_embd": "Q6_K", "output": "Q4_0"},
}

# general.file_type (llama.cpp's LlamaFileType) per weight type / preset
FILE_TYPE = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q2_K": 10, "Q4_K": 15,
             "Q4_K_M": 15, "Q6_K": 18, "MIXED": 15}

# The variants the oracle tests run (each checked to load and generate varied text in openvino_genai 2026.4.1).
# Every matrix type appears as layer weights, every architecture more than once, token_embd in F16 and quantized,
# the LM head separate (F16 and quantized) and tied, and three pre-tokenizers (smollm, qwen2, GenAI's default).
VARIANTS: Dict[str, Dict[str, object]] = {
    "llama-f16": dict(arch="llama", weight_type="F16"),
    "llama-q8_0-tied": dict(arch="llama", weight_type="Q8_0", output_type="tied"),
    "llama-q4_0": dict(arch="llama", weight_type="Q4_0", embed_type="F16", output_type="Q4_0"),
    "llama-q4_1-tied": dict(arch="llama", weight_type="Q4_1", embed_type="Q8_0", output_type="tied"),  # as SmolLM2
    # "llama-bpe" is not in GenAI's pre-tokenizer table: its default split regexes
    "llama-q4_k": dict(arch="llama", weight_type="Q4_K", tokenizer_pre="llama-bpe"),
    "llama-q6_k-tied": dict(arch="llama", weight_type="Q6_K", output_type="tied"),
    "llama-q4_k_m": dict(arch="llama", weight_type="Q4_K_M"),
    "qwen2-f16-tied": dict(arch="qwen2", weight_type="F16", output_type="tied"),
    "qwen2-q4_k_m": dict(arch="qwen2", weight_type="Q4_K_M", output_type="F16"),
    "qwen2-q8_0": dict(arch="qwen2", weight_type="Q8_0", embed_type="F16"),
    "qwen3-f16": dict(arch="qwen3", weight_type="F16"),
    "qwen3-mixed-tied": dict(arch="qwen3", weight_type="MIXED", output_type="tied"),
}


# ---- tokenizer ---------------------------------------------------------------------------------------------------
def read_tokenizer(source: Union[str, pathlib.Path] = TINY_GGUF):
    """(tokens, token types, merges, chat template, pre) from a GGUF's tokenizer.* metadata."""
    import gguf

    r = gguf.GGUFReader(str(source))

    def strs(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    types = [int(r.fields["tokenizer.ggml.token_type"].parts[i][0]) for i in r.fields["tokenizer.ggml.token_type"].data]
    return (strs("tokenizer.ggml.tokens"), types, strs("tokenizer.ggml.merges"),
            r.fields["tokenizer.chat_template"].contents(), r.fields["tokenizer.ggml.pre"].contents())


def suppressed_tokens(tokens) -> np.ndarray:
    """Token ids greedy decoding must never pick: the specials and the control bytes other than tab and newline."""
    out = list(range(N_SPECIAL))
    for tid in range(N_SPECIAL, len(tokens)):
        b = _gpt2_byte_of(tokens[tid])
        if b is not None and ((b < 0x20 and b not in (0x09, 0x0A)) or b == 0x7F):
            out.append(tid)
    return np.array(out, dtype=np.int64)


# ---- weights -----------------------------------------------------------------------------------------------------
def f16_exact(x) -> np.ndarray:
    """float32 values that float16 represents exactly: the F32 vectors (norms, biases) survive GenAI's
    enable_save_ov_model IR, which stores small f32 constants as f16 (compress_to_fp16)."""
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def make_weights(arch: str, tokens, seed: int, tied: bool) -> Dict[str, np.ndarray]:
    """float32 weights by GGUF tensor name (matrices as [rows, cols]: GGUF's ne = [cols, rows])."""
    rng = np.random.default_rng(seed)
    hd = HEAD_DIM[arch]
    sup = suppressed_tokens(tokens)

    def mat(rows, cols, std):
        return (rng.standard_normal((rows, cols)) * std).astype(np.float32)

    def norm(n, spread=0.1, scale=1.0):
        return f16_exact(scale * (1.0 + rng.standard_normal(n) * spread))

    def bias(n):
        return f16_exact(rng.standard_normal(n) * 0.3)

    t: Dict[str, np.ndarray] = {}
    emb = mat(VOCAB, HIDDEN, 1.0)
    emb[:, 0] = CARRIER
    if tied:
        emb[sup, 0] = -CARRIER  # the embedding is the LM head too
    t["token_embd.weight"] = emb
    for i in range(LAYERS):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = norm(HIDDEN)
        t[p + "attn_q.weight"] = mat(HEADS * hd, HIDDEN, 0.25)
        t[p + "attn_k.weight"] = mat(KV_HEADS * hd, HIDDEN, 0.25)
        t[p + "attn_v.weight"] = mat(KV_HEADS * hd, HIDDEN, 0.2)
        if arch == "qwen2":
            t[p + "attn_q.bias"] = bias(HEADS * hd)
            t[p + "attn_k.bias"] = bias(KV_HEADS * hd)
            t[p + "attn_v.bias"] = bias(KV_HEADS * hd)
        if arch == "qwen3":
            # per-head q/k RMSNorm: weights ~3 so attention is sharp (with ~1 it averages and text repeats)
            t[p + "attn_q_norm.weight"] = norm(hd, 0.2, 3.0)
            t[p + "attn_k_norm.weight"] = norm(hd, 0.2, 3.0)
        o = mat(HIDDEN, HEADS * hd, 0.2 * (256 / (HEADS * hd)) ** 0.5)
        o[0, :] *= 0.01  # (almost) never write to the carrier; not 0: an all-zero block has no scale
        t[p + "attn_output.weight"] = o
        t[p + "ffn_norm.weight"] = norm(HIDDEN)
        t[p + "ffn_gate.weight"] = mat(FFN, HIDDEN, 0.2)
        t[p + "ffn_up.weight"] = mat(FFN, HIDDEN, 0.2)
        d = mat(HIDDEN, FFN, 0.12)
        d[0, :] *= 0.01
        t[p + "ffn_down.weight"] = d
    onorm = norm(HIDDEN)
    onorm[0] = CARRIER_GAIN
    t["output_norm.weight"] = onorm
    if not tied:
        out = mat(VOCAB, HIDDEN, 0.3)
        out[:, 0] = CARRIER
        out[sup, 0] = -CARRIER
        t["output.weight"] = out
    return t


# ---- quantization ------------------------------------------------------------------------------------------------
def _f16(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).astype(np.float16)


def quantize_q4_k(w: np.ndarray) -> np.ndarray:
    """[rows, cols] float32 (cols % 256 == 0) -> [rows, cols / 256 * 144] uint8 in llama.cpp's block_q4_K layout
    (f16 d, f16 dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles). Every sub-block scale is >= 1 and
    every zero point within [0, 15], so readers that divide by a scale never see 0."""
    rows, cols = w.shape
    assert cols % 256 == 0, cols
    x = w.reshape(-1, 8, 32).astype(np.float32)                     # [blocks, sub-block, 32]
    mn = np.minimum(x.min(axis=2), 0.0)                              # llama.cpp keeps the min <= 0
    mx = x.max(axis=2)
    scale = np.maximum((mx - mn) / 15.0, 1e-8)
    negmin = -mn
    d = _f16(scale.max(axis=1) / 63.0).astype(np.float32)            # [blocks]
    dmin = _f16(np.maximum(negmin.max(axis=1), 1e-8) / 63.0).astype(np.float32)
    d = np.where(d == 0, np.float32(6e-8), d)
    dmin = np.where(dmin == 0, np.float32(6e-8), dmin)
    sc = np.clip(np.rint(scale / d[:, None]), 1, 63).astype(np.uint8)
    m = np.clip(np.rint(negmin / dmin[:, None]), 0, 63).astype(np.uint8)
    step = d[:, None] * sc                                           # [blocks, 8]
    off = dmin[:, None] * m
    q = np.clip(np.rint((x + off[:, :, None]) / step[:, :, None]), 0, 15).astype(np.uint8)  # [blocks, 8, 32]
    nb = x.shape[0]
    scales = np.zeros((nb, 12), np.uint8)
    for j in range(4):
        scales[:, j] = (sc[:, j] & 63) | ((sc[:, j + 4] >> 4) << 6)
        scales[:, j + 4] = (m[:, j] & 63) | ((m[:, j + 4] >> 4) << 6)
        scales[:, j + 8] = (sc[:, j + 4] & 0xF) | ((m[:, j + 4] & 0xF) << 4)
    qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(nb, 128)    # sub-blocks 2i (low) and 2i+1 (high)
    out = np.concatenate([d.astype(np.float16).view(np.uint8).reshape(nb, 2),
                          dmin.astype(np.float16).view(np.uint8).reshape(nb, 2), scales, qs], axis=1)
    return out.reshape(rows, cols // 256 * 144)


def quantize_q6_k(w: np.ndarray) -> np.ndarray:
    """[rows, cols] float32 (cols % 256 == 0) -> [rows, cols / 256 * 210] uint8 in llama.cpp's block_q6_K layout
    (128 bytes low nibbles, 64 bytes high 2-bit pairs, 16 int8 scales, f16 d). Scales are never 0."""
    rows, cols = w.shape
    assert cols % 256 == 0, cols
    x = w.reshape(-1, 16, 16).astype(np.float32)                    # [blocks, group, 16]
    nb = x.shape[0]
    gscale = np.maximum(np.abs(x).max(axis=2) / 31.0, 1e-8)        # [blocks, 16]
    d = _f16(gscale.max(axis=1) / 127.0).astype(np.float32)
    d = np.where(d == 0, np.float32(6e-8), d)
    sc = np.clip(np.rint(gscale / d[:, None]), 1, 127).astype(np.int8)
    step = d[:, None] * sc.astype(np.float32)
    q = (np.clip(np.rint(x / step[:, :, None]), -32, 31) + 32).astype(np.uint8).reshape(nb, 256)
    ql = np.zeros((nb, 128), np.uint8)
    qh = np.zeros((nb, 64), np.uint8)
    for h in range(2):
        b = h * 128
        q1, q2, q3, q4 = q[:, b:b + 32], q[:, b + 32:b + 64], q[:, b + 64:b + 96], q[:, b + 96:b + 128]
        ql[:, h * 64:h * 64 + 32] = (q1 & 0xF) | ((q3 & 0xF) << 4)
        ql[:, h * 64 + 32:h * 64 + 64] = (q2 & 0xF) | ((q4 & 0xF) << 4)
        qh[:, h * 32:h * 32 + 32] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
    out = np.concatenate([ql, qh, sc.view(np.uint8), d.astype(np.float16).view(np.uint8).reshape(nb, 2)], axis=1)
    return out.reshape(rows, cols // 256 * 210)


def random_q2_k(rows: int, cols: int, rng) -> np.ndarray:
    """Random block_q2_K bytes (84 per 256 weights) with small finite f16 d/dmin: a type GenAI does not read."""
    nb = rows * cols // 256
    raw = rng.integers(0, 256, size=(nb, 84), dtype=np.uint8)
    raw[:, 80:84] = np.array([0.001, 0.001], np.float16).view(np.uint8)
    return raw.reshape(rows, cols // 256 * 84)


def quantize(w: np.ndarray, qtype: str, rng=None):
    """(array, raw_dtype or None) for GGUFWriter.add_tensor."""
    import gguf
    from gguf import GGMLQuantizationType as T

    if qtype == "F32":
        return w.astype(np.float32), None
    if qtype == "F16":
        return w.astype(np.float16), None
    if qtype in ("Q4_0", "Q4_1", "Q8_0", "Q5_0"):
        t = getattr(T, qtype)
        return gguf.quants.quantize(w.astype(np.float32), t), t
    if qtype == "Q4_K":
        return quantize_q4_k(w), T.Q4_K
    if qtype == "Q6_K":
        return quantize_q6_k(w), T.Q6_K
    if qtype == "Q2_K":
        return random_q2_k(w.shape[0], w.shape[1], rng if rng is not None else np.random.default_rng(0)), T.Q2_K
    raise ValueError(f"unknown tensor type {qtype!r}")


def dequantize(raw: np.ndarray, qtype: str) -> np.ndarray:
    """What llama.cpp (gguf.quants) reads back from quantized bytes (for checks)."""
    import gguf

    return gguf.quants.dequantize(raw, getattr(gguf.GGMLQuantizationType, qtype))


# ---- the file ----------------------------------------------------------------------------------------------------
def role_types(weight_type: Union[str, Mapping[str, str]], embed_type: Optional[str],
               output_type: Optional[str]) -> Dict[str, str]:
    """role -> tensor type for the layer matrices, "token_embd" and "output" ("tied": no output.weight)."""
    if isinstance(weight_type, Mapping):
        roles = {r: weight_type.get(r, "F16") for r in LAYER_MATRICES + ("token_embd", "output")}
    elif weight_type in PRESETS:
        roles = dict(PRESETS[weight_type])
    else:
        roles = {r: weight_type for r in LAYER_MATRICES + ("token_embd", "output")}
    if embed_type is not None:
        roles["token_embd"] = embed_type
    if output_type is not None:
        roles["output"] = output_type
    return roles


def make_gguf(path: Union[str, pathlib.Path], arch: str = "llama",
              weight_type: Union[str, Mapping[str, str]] = "F16", *, embed_type: Optional[str] = None,
              output_type: Optional[str] = None, seed: int = DEFAULT_SEED, tokenizer_pre: Optional[str] = None,
              file_type: Optional[int] = None, arch_name: Optional[str] = None, omit_keys: Iterable[str] = (),
              omit_tensors: Iterable[str] = (), vocab_source: Union[str, pathlib.Path] = TINY_GGUF,
              int_overrides: Optional[Mapping[str, int]] = None) -> pathlib.Path:
    """Write the model described in the module docstring to ``path`` (returned). ``weight_type``: one type for
    every matrix ("F16", "F32", "Q4_0", "Q4_1", "Q8_0", "Q4_K", "Q6_K", "Q5_0", "Q2_K"), a preset of PRESETS
    ("Q4_K_M", "MIXED") or a {role: type} mapping; ``embed_type`` / ``output_type`` override token_embd's and the
    LM head's type; ``output_type="tied"`` writes no output.weight; ``int_overrides`` writes those metadata keys with
    other (u32) values, e.g. a head count its tensors disagree with."""
    import gguf

    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, not {arch!r}")
    path = pathlib.Path(path)
    roles = role_types(weight_type, embed_type, output_type)
    tied = roles["output"] == "tied"
    tokens, types, merges, template, pre = read_tokenizer(vocab_source)
    tokens, types = tokens[:VOCAB], types[:VOCAB]
    if tokenizer_pre is None:
        tokenizer_pre = pre if arch == "llama" else "qwen2"
    if file_type is None:
        key = weight_type if isinstance(weight_type, str) else "MIXED"
        file_type = FILE_TYPE.get(key, 15)
    omit_keys, omit_tensors = set(omit_keys), set(omit_tensors)
    name = arch_name or arch
    hd = HEAD_DIM[arch]

    w = gguf.GGUFWriter(str(path), name)
    kv = []  # (key, adder)
    kv.append(("general.name", lambda: w.add_name(f"ovgenai_c tiny {arch} test model")))
    kv.append(("general.type", lambda: w.add_type("model")))
    kv.append(("general.file_type", lambda: w.add_file_type(file_type)))
    kv.append((f"{name}.block_count", lambda: w.add_block_count(LAYERS)))
    kv.append((f"{name}.context_length", lambda: w.add_context_length(CONTEXT[arch])))
    kv.append((f"{name}.embedding_length", lambda: w.add_embedding_length(HIDDEN)))
    kv.append((f"{name}.feed_forward_length", lambda: w.add_feed_forward_length(FFN)))
    kv.append((f"{name}.attention.head_count", lambda: w.add_head_count(HEADS)))
    kv.append((f"{name}.attention.head_count_kv", lambda: w.add_head_count_kv(KV_HEADS)))
    if hd != HIDDEN // HEADS:
        kv.append((f"{name}.attention.key_length", lambda: w.add_key_length(hd)))
        kv.append((f"{name}.attention.value_length", lambda: w.add_value_length(hd)))
    kv.append((f"{name}.rope.freq_base", lambda: w.add_rope_freq_base(ROPE_BASE[arch])))
    kv.append((f"{name}.attention.layer_norm_rms_epsilon", lambda: w.add_layer_norm_rms_eps(RMS_EPS[arch])))
    kv.append((f"{name}.rope.dimension_count", lambda: w.add_rope_dimension_count(hd)))
    kv.append((f"{name}.vocab_size", lambda: w.add_vocab_size(VOCAB)))
    kv.append(("general.quantization_version", lambda: w.add_quantization_version(2)))
    kv.append(("tokenizer.ggml.model", lambda: w.add_tokenizer_model("gpt2")))
    kv.append(("tokenizer.ggml.pre", lambda: w.add_tokenizer_pre(tokenizer_pre)))
    kv.append(("tokenizer.ggml.tokens", lambda: w.add_token_list(tokens)))
    kv.append(("tokenizer.ggml.token_type", lambda: w.add_token_types(types)))
    kv.append(("tokenizer.ggml.merges", lambda: w.add_token_merges(merges)))
    kv.append(("tokenizer.ggml.bos_token_id", lambda: w.add_bos_token_id(BOS)))
    kv.append(("tokenizer.ggml.eos_token_id", lambda: w.add_eos_token_id(EOS)))
    kv.append(("tokenizer.ggml.unknown_token_id", lambda: w.add_unk_token_id(UNK)))
    kv.append(("tokenizer.ggml.padding_token_id", lambda: w.add_pad_token_id(PAD)))
    kv.append(("tokenizer.ggml.add_bos_token", lambda: w.add_add_bos_token(False)))
    kv.append(("tokenizer.ggml.add_space_prefix", lambda: w.add_add_space_prefix(False)))
    kv.append(("tokenizer.chat_template", lambda: w.add_chat_template(template)))
    for key, value in (int_overrides or {}).items():
        kv = [(k, add) for k, add in kv if k != key] + [(key, lambda key=key, value=value: w.add_uint32(key, value))]
    unknown = omit_keys - {k for k, _ in kv} - {"general.architecture"}
    if unknown:
        raise ValueError(f"omit_keys names keys this generator does not write: {sorted(unknown)}")
    if "general.architecture" in omit_keys:
        # GGUFWriter writes general.architecture itself: drop it from its key list before anything is written
        for shard in w.kv_data:
            shard.pop("general.architecture", None)
    for key, add in kv:
        if key not in omit_keys:
            add()

    weights = make_weights(arch, tokens, seed, tied)
    unknown = omit_tensors - set(weights)
    if unknown:
        raise ValueError(f"omit_tensors names tensors this model does not have: {sorted(unknown)}")
    qrng = np.random.default_rng(seed + 1)
    for tname, arr in weights.items():
        if tname in omit_tensors:
            continue
        if arr.ndim == 1:  # norms and biases
            w.add_tensor(tname, arr.astype(np.float32))
            continue
        role = tname.split(".")[-2] if tname.startswith("blk.") else tname.split(".")[0]
        data, raw = quantize(arr, roles[role], qrng)
        if raw is None:
            w.add_tensor(tname, data)
        else:
            w.add_tensor(tname, data, raw_dtype=raw)
    path.parent.mkdir(parents=True, exist_ok=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def make_variant(path: Union[str, pathlib.Path], variant: str, **overrides) -> pathlib.Path:
    """make_gguf with VARIANTS[variant] (plus overrides)."""
    return make_gguf(path, **{**VARIANTS[variant], **overrides})


# ---- malformed files ---------------------------------------------------------------------------------------------
def truncated_copy(src: Union[str, pathlib.Path], dst: Union[str, pathlib.Path], keep: float = 0.6) -> pathlib.Path:
    """The first ``keep`` fraction of ``src`` (header intact, tensor data cut short)."""
    data = pathlib.Path(src).read_bytes()
    dst = pathlib.Path(dst)
    dst.write_bytes(data[:int(len(data) * keep)])
    return dst


def garbage_gguf(dst: Union[str, pathlib.Path], size: int = 4096, seed: int = 7) -> pathlib.Path:
    """"GGUF", version 3, then random bytes (absurd tensor / key counts, lengths and types)."""
    rng = np.random.default_rng(seed)
    dst = pathlib.Path(dst)
    dst.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + rng.integers(0, 256, size=size, dtype=np.uint8).tobytes())
    return dst


# ---- CLI ---------------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=pathlib.Path, help="the .gguf to write (with --all: a folder)")
    ap.add_argument("--all", action="store_true", help="write every VARIANT as OUT/<name>.gguf")
    ap.add_argument("--variant", choices=sorted(VARIANTS))
    ap.add_argument("--arch", choices=ARCHS, default="llama")
    ap.add_argument("--weight-type", default="F16")
    ap.add_argument("--embed-type")
    ap.add_argument("--output-type", help='a type, or "tied" (no output.weight)')
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    a = ap.parse_args(argv)
    if a.all:
        a.out.mkdir(parents=True, exist_ok=True)
        for name in VARIANTS:
            p = make_variant(a.out / f"{name}.gguf", name, seed=a.seed)
            print(f"{p} ({p.stat().st_size} bytes)")
        return 0
    if a.variant:
        p = make_variant(a.out, a.variant, seed=a.seed)
    else:
        p = make_gguf(a.out, a.arch, a.weight_type, embed_type=a.embed_type, output_type=a.output_type, seed=a.seed)
    print(f"{p} ({p.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
