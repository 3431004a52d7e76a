#!/usr/bin/env python3
"""Make a tiny random-weights Whisper model (for fast tests) and convert it to OpenVINO IR.

What it makes (in OUT)
  ct2/   a CTranslate2 ``WhisperSpec`` model: model.bin (float16 weights from numpy ``default_rng(SEED)``,
         2 encoder and 2 decoder layers, d_model 64, 4 heads, FFN 128, 80 mel bins, 1500 audio positions,
         448 text positions), config.json, tokenizer.json and vocabulary.txt — the real vocabulary of the model
         in VOCAB_FROM (51864 tokens for tiny.en: English only; 51865 for base: multilingual).
  ir/    that model converted by ``python -m ovgenai_c_tools.convert_whisper_ct2 ct2 ir`` (the same converter
         as the real models), which ``openvino_genai.WhisperPipeline`` and the bundled backend load.

By construction the end-of-text token never wins (its embedding row has a large negative weight on a
residual "carrier" dimension that the final layer norm holds constant), so greedy decoding runs until
``max_new_tokens``; pass that in tests. The other tokens come out varied and depend on the audio.

VOCAB_FROM is a folder with the real model's ``tokenizer.json`` including the timestamp tokens (an IR folder
made by convert_whisper_ct2, e.g. ~/.cache/ovgenai_c/models/whisper-tiny.en/ir) and its
``generation_config.json`` (suppress tokens, alignment heads).

Usage
  python scripts/make_tiny_whisper.py VOCAB_FROM OUT [--no-convert]
Needs numpy; the conversion needs the converter's tools (openvino, openvino-tokenizers, transformers).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
from typing import Dict, List

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from ovgenai_c_tools.ct2_model import write_ct2_model  # noqa: E402

SEED = 20261202
D_MODEL = 64
HEADS = 4
ENCODER_LAYERS = 2
DECODER_LAYERS = 2
FFN = 128
N_MELS = 80
AUDIO_POSITIONS = 1500
TEXT_POSITIONS = 448
CARRIER = 0  # residual dimension the final layer norm holds constant (gamma 0, beta CARRIER_VALUE)
CARRIER_VALUE = 4.0
EOT_PENALTY = -8.0  # embedding[eot, CARRIER]: logit(eot) gets CARRIER_VALUE * EOT_PENALTY
POSITION_SCALE = 3.0  # text position embeddings outweigh the (tied) token embedding, so tokens do not repeat


def vocabulary_from(folder: pathlib.Path) -> List[str]:
    """The tokens in id order from a tokenizer.json (model vocab + added tokens, which must cover 0..N-1)."""
    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    by_id: Dict[int, str] = {i: t for t, i in tokenizer["model"]["vocab"].items()}
    by_id.update({t["id"]: t["content"] for t in tokenizer.get("added_tokens", [])})
    n = max(by_id) + 1
    missing = [i for i in range(n) if i not in by_id]
    if missing:
        raise SystemExit(f"{folder}/tokenizer.json lacks ids {missing[:5]}... (need the timestamp tokens too)")
    return [by_id[i] for i in range(n)]


def sinusoids(length: int, channels: int) -> np.ndarray:
    """Whisper's audio position encodings."""
    log_timescale = np.log(10000) / (channels // 2 - 1)
    inv = np.exp(-log_timescale * np.arange(channels // 2))
    t = np.arange(length)[:, None] * inv[None, :]
    return np.concatenate([np.sin(t), np.cos(t)], axis=1)


def make_variables(vocab_size: int, eot: int, alignment_heads: List[List[int]]) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    d = D_MODEL

    def w(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale / np.sqrt(shape[-1])).astype(np.float16)

    def f16(a: np.ndarray) -> np.ndarray:
        return np.asarray(a, dtype=np.float16)

    def norm(prefix: str) -> Dict[str, np.ndarray]:
        return {f"{prefix}/gamma": f16(1.0 + 0.1 * rng.standard_normal(d)),
                f"{prefix}/beta": f16(0.1 * rng.standard_normal(d))}

    def linear(prefix: str, n_out: int, n_in: int, zero_rows: slice = slice(0, 0)) -> Dict[str, np.ndarray]:
        bias = 0.1 * rng.standard_normal(n_out)
        bias[zero_rows] = 0.0  # Whisper's key projections have no bias
        return {f"{prefix}/weight": w(n_out, n_in), f"{prefix}/bias": f16(bias)}

    def ffn(prefix: str) -> Dict[str, np.ndarray]:
        return {**norm(f"{prefix}/layer_norm"), **linear(f"{prefix}/linear_0", FFN, d),
                **linear(f"{prefix}/linear_1", d, FFN)}

    v: Dict[str, np.ndarray] = {}
    v["encoder/conv1/weight"] = w(d, N_MELS, 3)
    v["encoder/conv1/bias"] = f16(0.1 * rng.standard_normal(d))
    v["encoder/conv2/weight"] = w(d, d, 3)
    v["encoder/conv2/bias"] = f16(0.1 * rng.standard_normal(d))
    v["encoder/position_encodings/encodings"] = f16(sinusoids(AUDIO_POSITIONS, d))
    for i in range(ENCODER_LAYERS):
        p = f"encoder/layer_{i}"
        v.update(norm(f"{p}/self_attention/layer_norm"))
        v.update(linear(f"{p}/self_attention/linear_0", 3 * d, d, slice(d, 2 * d)))
        v.update(linear(f"{p}/self_attention/linear_1", d, d))
        v.update(ffn(f"{p}/ffn"))
    v.update(norm("encoder/layer_norm"))
    v["encoder/num_heads"] = np.array(HEADS, dtype=np.int16)

    embeddings = rng.standard_normal((vocab_size, d)).astype(np.float32)
    embeddings[:, CARRIER] = 0.0
    embeddings[eot, CARRIER] = EOT_PENALTY
    v["decoder/embeddings/weight"] = f16(embeddings)
    v["decoder/position_encodings/encodings"] = f16(POSITION_SCALE * rng.standard_normal((TEXT_POSITIONS, d)))
    for i in range(DECODER_LAYERS):
        p = f"decoder/layer_{i}"
        v.update(norm(f"{p}/self_attention/layer_norm"))
        v.update(linear(f"{p}/self_attention/linear_0", 3 * d, d, slice(d, 2 * d)))
        v.update(linear(f"{p}/self_attention/linear_1", d, d))
        v.update(norm(f"{p}/attention/layer_norm"))
        v.update(linear(f"{p}/attention/linear_0", d, d))
        v.update(linear(f"{p}/attention/linear_1", 2 * d, d, slice(0, d)))
        v.update(linear(f"{p}/attention/linear_2", d, d))
        v.update(ffn(f"{p}/ffn"))
    final = norm("decoder/layer_norm")
    final["decoder/layer_norm/gamma"][CARRIER] = 0.0
    final["decoder/layer_norm/beta"][CARRIER] = CARRIER_VALUE
    v.update(final)
    v["decoder/num_heads"] = np.array(HEADS, dtype=np.int16)
    v["decoder/activation"] = np.array(3, dtype=np.int8)  # GELU
    v["decoder/alibi"] = np.array(0, dtype=np.int8)
    v["decoder/pre_norm"] = np.array(1, dtype=np.int8)
    v["decoder/scale_embeddings"] = np.array(0, dtype=np.int8)
    v["decoder/start_from_zero_embedding"] = np.array(0, dtype=np.int8)
    v["decoder/alignment_heads"] = np.array(len(alignment_heads), dtype=np.int16)
    v["decoder/alignment_layer"] = np.array(-1, dtype=np.int16)
    return dict(sorted(v.items()))


def make_ct2(vocab_from: pathlib.Path, out: pathlib.Path) -> None:
    vocabulary = vocabulary_from(vocab_from)
    generation = json.loads((vocab_from / "generation_config.json").read_text(encoding="utf-8"))
    eot = vocabulary.index("<|endoftext|>")
    heads = [[layer, head] for layer in range(DECODER_LAYERS) for head in range(HEADS)][DECODER_LAYERS * HEADS // 2:]
    out.mkdir(parents=True, exist_ok=True)
    write_ct2_model(out / "model.bin", "WhisperSpec", 3, make_variables(len(vocabulary), eot, heads),
                    {"decoder/projection/weight": "decoder/embeddings/weight"})
    (out / "vocabulary.txt").write_text("".join(t + "\n" for t in vocabulary), encoding="utf-8")
    (out / "tokenizer.json").write_text((vocab_from / "tokenizer.json").read_text(encoding="utf-8"),
                                        encoding="utf-8")
    config = {"alignment_heads": heads, "suppress_ids": generation["suppress_tokens"],
              "suppress_ids_begin": generation["begin_suppress_tokens"]}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vocab_from", type=pathlib.Path)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--no-convert", action="store_true")
    args = parser.parse_args(argv)
    make_ct2(args.vocab_from, args.out / "ct2")
    if args.no_convert:
        return 0
    r = subprocess.run([sys.executable, "-m", "ovgenai_c_tools.convert_whisper_ct2", str(args.out / "ct2"),
                        str(args.out / "ir")], cwd=str(REPO))
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
