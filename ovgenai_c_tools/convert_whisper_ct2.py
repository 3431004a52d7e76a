"""CTranslate2 Whisper model -> OpenVINO IR folder that ``openvino_genai.WhisperPipeline`` (and the bundled
backend) loads:

    python -m ovgenai_c_tools.convert_whisper_ct2 SRC DST

``SRC`` holds a CTranslate2 ``WhisperSpec`` model: ``model.bin`` (or ``model.bin.part1``, ``.part2``, ...
concatenated in order), ``config.json`` (alignment heads, suppress ids), ``tokenizer.json`` and
``vocabulary.txt``. ``DST`` gets, in optimum-intel's layout:

- ``openvino_encoder_model.xml/.bin`` and the stateful ``openvino_decoder_model.xml/.bin``
  (:mod:`ovgenai_c_tools.whisper_ir` documents their inputs, outputs and state variables);
- ``openvino_tokenizer.xml/.bin`` and ``openvino_detokenizer.xml/.bin`` (openvino_tokenizers, from
  ``tokenizer.json`` with the timestamp tokens ``<|0.00|>`` .. ``<|30.00|>`` of the vocabulary added), and that
  ``tokenizer.json`` / ``tokenizer_config.json``;
- ``config.json``, ``generation_config.json``, ``preprocessor_config.json`` with the fields Hugging Face's
  Whisper files have for the model (special token ids derived from the vocabulary, not assumed).

Prints a JSON summary (versions, sizes) on success. Exit status 2: the source is not a model this converter
understands (the message says why); NO_TOOLS_EXIT: openvino_tokenizers / transformers cannot be imported.
Needs the ``convert`` extra (openvino-tokenizers, transformers).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .ct2_model import CT2FormatError, CT2Model, parse_ct2_model
from .whisper_ir import WhisperDims, build_decoder, build_encoder, whisper_dims

NO_TOOLS_EXIT = 3
FORMAT_ERROR_EXIT = 2

SAMPLING_RATE = 16000
HOP_LENGTH = 160
N_FFT = 400
CHUNK_LENGTH = 30
TIMESTAMP_COUNT = 1501  # <|0.00|> .. <|30.00|> in steps of 0.02 s
_LANGUAGE_TOKEN = re.compile(r"^<\|([a-z]{2,3}|haw|yue)\|>$")

OUTPUT_FILES = ("openvino_encoder_model.xml", "openvino_encoder_model.bin", "openvino_decoder_model.xml",
                "openvino_decoder_model.bin", "openvino_tokenizer.xml", "openvino_tokenizer.bin",
                "openvino_detokenizer.xml", "openvino_detokenizer.bin", "config.json", "generation_config.json",
                "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json")


class WhisperSourceError(CT2FormatError):
    """The source folder lacks a file or holds one that does not fit a CTranslate2 Whisper model."""


# --------------------------------------------------------------------------- reading the source


def read_model_bin(src: Path) -> CT2Model:
    """``model.bin``, or its parts ``model.bin.part1``, ``model.bin.part2``, ... joined in order."""
    whole = src / "model.bin"
    if whole.is_file():
        return parse_ct2_model(whole.read_bytes(), whole)
    parts: List[Path] = []
    while (src / f"model.bin.part{len(parts) + 1}").is_file():
        parts.append(src / f"model.bin.part{len(parts) + 1}")
    if not parts:
        raise WhisperSourceError(f"{src}: no model.bin (nor model.bin.part1, ...)")
    return parse_ct2_model(b"".join(p.read_bytes() for p in parts), whole)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise WhisperSourceError(f"cannot read {path}: {exc}") from exc
    except ValueError as exc:
        raise WhisperSourceError(f"{path} is not valid JSON: {exc}") from exc


def read_vocabulary(src: Path) -> List[str]:
    """The model's tokens in id order (``vocabulary.txt``, one a line, or ``vocabulary.json``, a list)."""
    txt, js = src / "vocabulary.txt", src / "vocabulary.json"
    if txt.is_file():
        text = txt.read_text(encoding="utf-8")
        return (text[:-1] if text.endswith("\n") else text).split("\n")  # (not splitlines: only "\n" ends a line)
    if js.is_file():
        vocab = _read_json(js)
        if isinstance(vocab, list) and all(isinstance(t, str) for t in vocab):
            return vocab
        raise WhisperSourceError(f"{js} is not a list of tokens")
    raise WhisperSourceError(f"{src}: no vocabulary.txt or vocabulary.json")


class SpecialTokens:
    """Whisper's special token ids, found by their text in the vocabulary."""

    def __init__(self, vocabulary: Sequence[str], vocab_size: int) -> None:
        index: Dict[str, int] = {}
        for i, token in enumerate(vocabulary):
            index.setdefault(token, i)

        def need(*names: str) -> int:
            for name in names:
                if name in index:
                    return index[name]
            raise WhisperSourceError(f"the vocabulary has no {' / '.join(names)} token")

        self.eot = need("<|endoftext|>")
        self.sot = need("<|startoftranscript|>")
        self.translate = need("<|translate|>")
        self.transcribe = need("<|transcribe|>")
        self.sot_lm = need("<|startoflm|>")
        self.sot_prev = need("<|startofprev|>")
        self.no_speech = need("<|nospeech|>", "<|nocaptions|>")
        self.no_timestamps = need("<|notimestamps|>")
        self.timestamp_begin = self.no_timestamps + 1
        self.languages: Dict[str, int] = {
            vocabulary[i]: i for i in range(self.sot + 1, self.translate) if _LANGUAGE_TOKEN.match(vocabulary[i])}
        # Hugging Face's rule (WhisperConfig / generation): multilingual iff the vocabulary has >= 51865 tokens
        self.is_multilingual = vocab_size >= 51865
        if not self.languages:
            raise WhisperSourceError("the vocabulary has no language tokens between <|startoftranscript|> and "
                                     "<|translate|>")


def full_vocabulary(vocabulary: Sequence[str], special: SpecialTokens, vocab_size: int) -> List[str]:
    """The vocabulary padded to ``vocab_size`` with the timestamp tokens when the source lacks them."""
    tokens = list(vocabulary[:vocab_size])
    while len(tokens) < vocab_size:
        step = len(tokens) - special.timestamp_begin
        if not 0 <= step < TIMESTAMP_COUNT:
            raise WhisperSourceError(f"the vocabulary has {len(vocabulary)} tokens, the model {vocab_size}, and "
                                     "the gap is not the timestamp tokens")
        tokens.append(f"<|{step * 0.02:.2f}|>")
    return tokens


# --------------------------------------------------------------------------- the JSON files


def model_config(dims: WhisperDims, special: SpecialTokens, ct2_config: Dict[str, Any]) -> Dict[str, Any]:
    """``config.json`` as Hugging Face's ``WhisperConfig`` writes it for this model."""
    return {
        "activation_dropout": 0.0,
        "activation_function": "gelu",
        "apply_spec_augment": False,
        "architectures": ["WhisperForConditionalGeneration"],
        "attention_dropout": 0.0,
        "begin_suppress_tokens": list(ct2_config.get("suppress_ids_begin", [220, special.eot])),
        "bos_token_id": special.eot + (0 if special.is_multilingual else 1),  # (Hugging Face's values: 50257)
        "classifier_proj_size": 256,
        "d_model": dims.d_model,
        "decoder_attention_heads": dims.decoder_heads,
        "decoder_ffn_dim": dims.decoder_ffn,
        "decoder_layerdrop": 0.0,
        "decoder_layers": dims.decoder_layers,
        "decoder_start_token_id": special.sot,
        "dropout": 0.0,
        "encoder_attention_heads": dims.encoder_heads,
        "encoder_ffn_dim": dims.encoder_ffn,
        "encoder_layerdrop": 0.0,
        "encoder_layers": dims.encoder_layers,
        "eos_token_id": special.eot,
        "init_std": 0.02,
        "is_encoder_decoder": True,
        "max_length": dims.max_target_positions,
        "max_source_positions": dims.max_source_positions,
        "max_target_positions": dims.max_target_positions,
        "median_filter_width": 7,
        "model_type": "whisper",
        "num_hidden_layers": dims.encoder_layers,
        "num_mel_bins": dims.n_mels,
        "pad_token_id": special.eot,
        "scale_embedding": False,
        "torch_dtype": "float16",
        "use_cache": True,
        "use_weighted_layer_sum": False,
        "vocab_size": dims.vocab_size,
    }


def generation_config(dims: WhisperDims, special: SpecialTokens, ct2_config: Dict[str, Any]) -> Dict[str, Any]:
    """``generation_config.json`` as Hugging Face has it for the Whisper checkpoints."""
    config: Dict[str, Any] = {
        "alignment_heads": [list(map(int, pair)) for pair in ct2_config.get("alignment_heads", [])],
        "begin_suppress_tokens": list(ct2_config.get("suppress_ids_begin", [220, special.eot])),
        "bos_token_id": special.eot + (0 if special.is_multilingual else 1),
        "decoder_start_token_id": special.sot,
        "eos_token_id": special.eot,
        "is_multilingual": special.is_multilingual,
        "max_initial_timestamp_index": 50,
        "max_length": dims.max_target_positions,
        "no_timestamps_token_id": special.no_timestamps,
        "pad_token_id": special.eot,
        "prev_sot_token_id": special.sot_prev,
        "return_timestamps": False,
        "suppress_tokens": list(ct2_config.get("suppress_ids", [])),
    }
    if special.is_multilingual:
        config["forced_decoder_ids"] = [[1, None], [2, special.transcribe]]
        config["lang_to_id"] = dict(sorted(special.languages.items()))
        config["task_to_id"] = {"transcribe": special.transcribe, "translate": special.translate}
    else:
        config["forced_decoder_ids"] = [[1, special.no_timestamps]]
    return config


def preprocessor_config(dims: WhisperDims) -> Dict[str, Any]:
    """``preprocessor_config.json`` (Hugging Face's ``WhisperFeatureExtractor``)."""
    return {
        "chunk_length": CHUNK_LENGTH,
        "feature_extractor_type": "WhisperFeatureExtractor",
        "feature_size": dims.n_mels,
        "hop_length": HOP_LENGTH,
        "n_fft": N_FFT,
        "n_samples": CHUNK_LENGTH * SAMPLING_RATE,
        "nb_max_frames": CHUNK_LENGTH * SAMPLING_RATE // HOP_LENGTH,
        "padding_side": "right",
        "padding_value": 0.0,
        "processor_class": "WhisperProcessor",
        "return_attention_mask": False,
        "sampling_rate": SAMPLING_RATE,
    }


def tokenizer_json_with_timestamps(tokenizer: Dict[str, Any], vocabulary: Sequence[str]) -> Dict[str, Any]:
    """``tokenizer.json`` with every vocabulary token it lacks (the timestamps) as a non-special added token,
    as Hugging Face's Whisper tokenizers have them."""
    out = json.loads(json.dumps(tokenizer))
    added = out.setdefault("added_tokens", [])
    known = {t["id"] for t in added} | set(out.get("model", {}).get("vocab", {}).values())
    for i, token in enumerate(vocabulary):
        if i not in known:
            added.append({"id": i, "content": token, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": False})
    added.sort(key=lambda t: t["id"])
    return out


def tokenizer_config(special: SpecialTokens, vocabulary: Sequence[str]) -> Dict[str, Any]:
    return {
        "add_prefix_space": False,
        "bos_token": vocabulary[special.eot],
        "clean_up_tokenization_spaces": True,
        "eos_token": vocabulary[special.eot],
        "errors": "replace",
        "model_max_length": 1024,
        "pad_token": vocabulary[special.eot],
        "processor_class": "WhisperProcessor",
        "return_attention_mask": False,
        "tokenizer_class": "WhisperTokenizer",
        "unk_token": vocabulary[special.eot],
    }


# --------------------------------------------------------------------------- conversion


def _write_json(path: Path, data: Dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def convert_tokenizers(folder: Path) -> None:
    """openvino_tokenizer / openvino_detokenizer IR from ``folder``'s tokenizer.json + tokenizer_config.json."""
    import openvino as ov
    from openvino_tokenizers import convert_tokenizer

    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # (no "PyTorch was not found" note: not needed)
    from transformers import AutoTokenizer

    hf_tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer, detokenizer = convert_tokenizer(hf_tokenizer, with_detokenizer=True, skip_special_tokens=True)
    ov.save_model(tokenizer, str(folder / "openvino_tokenizer.xml"))
    ov.save_model(detokenizer, str(folder / "openvino_detokenizer.xml"))


def convert(src: Path, dst: Path) -> Dict[str, Any]:
    """Convert the CTranslate2 Whisper model in ``src`` into the IR folder ``dst`` (written to a temporary
    sibling, then renamed into place). Returns a summary."""
    import openvino as ov

    src, dst = Path(src), Path(dst)
    model = read_model_bin(src)
    dims = whisper_dims(model)
    ct2_config = _read_json(src / "config.json") if (src / "config.json").is_file() else {}
    if not isinstance(ct2_config, dict):
        raise WhisperSourceError(f"{src / 'config.json'} is not a JSON object")
    tokenizer = _read_json(src / "tokenizer.json")
    vocabulary = read_vocabulary(src)
    special = SpecialTokens(vocabulary, dims.vocab_size)
    vocabulary = full_vocabulary(vocabulary, special, dims.vocab_size)

    dst.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=dst.name + ".tmp-", dir=dst.parent))
    try:
        work.chmod(0o755)
        ov.save_model(build_encoder(model), str(work / "openvino_encoder_model.xml"), compress_to_fp16=False)
        ov.save_model(build_decoder(model), str(work / "openvino_decoder_model.xml"), compress_to_fp16=False)
        del model
        _write_json(work / "tokenizer.json", tokenizer_json_with_timestamps(tokenizer, vocabulary))
        _write_json(work / "tokenizer_config.json", tokenizer_config(special, vocabulary))
        _write_json(work / "config.json", model_config(dims, special, ct2_config))
        _write_json(work / "generation_config.json", generation_config(dims, special, ct2_config))
        _write_json(work / "preprocessor_config.json", preprocessor_config(dims))
        convert_tokenizers(work)
        if dst.exists():
            shutil.rmtree(dst)
        os.replace(work, dst)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    import openvino_tokenizers

    return {"openvino": ov.get_version(), "openvino_tokenizers": getattr(openvino_tokenizers, "__version__", "?"),
            "d_model": dims.d_model, "encoder_layers": dims.encoder_layers, "decoder_layers": dims.decoder_layers,
            "vocab_size": dims.vocab_size, "is_multilingual": special.is_multilingual, "output": str(dst)}


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        sys.stderr.write("usage: python -m ovgenai_c_tools.convert_whisper_ct2 SRC_CT2_FOLDER DST_IR_FOLDER\n")
        return FORMAT_ERROR_EXIT
    missing = [m for m in ("openvino_tokenizers", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        sys.stderr.write(f"convert_whisper_ct2 needs {' and '.join(missing)} (the convert extra: "
                         "pip install 'ovgenai_c[convert]')\n")
        return NO_TOOLS_EXIT
    try:
        summary = convert(Path(args[0]), Path(args[1]))
    except CT2FormatError as exc:
        sys.stderr.write(f"convert_whisper_ct2: {exc}\n")
        return FORMAT_ERROR_EXIT
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
