"""What can be learnt about a model from its files without loading it: format, chat template, context length.

IR folders: the chat template is the ``<rt_info><chat_template value="..."/>`` of ``openvino_tokenizer.xml``;
the context length comes from ``config.json`` (``max_position_embeddings``) when there is one.
GGUF files: a small reader of the GGUF metadata header (no dependency) gives ``tokenizer.chat_template`` and
``<arch>.context_length``.
"""
from __future__ import annotations

import json
import os
import struct
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Dict, Optional, Union

from ..ir_folder import TOKENIZER_XML, is_ir_folder


def model_format(path: Union[str, os.PathLike]) -> Optional[str]:
    """``"ir"`` for an OpenVINO IR LLM folder (:func:`ovgenai_c.ir_folder.is_ir_folder`), ``"gguf"`` for a
    .gguf file, ``"whisper"`` for a Whisper IR folder (speech to text), else None."""
    p = Path(path)
    if p.is_file() and p.suffix == ".gguf":  # (GenAI reads a GGUF by this exact extension)
        return "gguf"
    if is_ir_folder(p):
        return "ir"
    if p.is_dir():
        from ..whisper_pipeline import missing_whisper_files

        if not missing_whisper_files(p):
            return "whisper"
    return None


@dataclass(frozen=True)
class ModelInfo:
    path: str
    format: Optional[str]
    chat_template: Optional[str]
    context_length: Optional[int]


def _ir_chat_template(folder: Path) -> Optional[str]:
    xml = folder / TOKENIZER_XML
    try:
        if xml.stat().st_size == 0:
            return None
        in_rt_info = 0
        for event, elem in ET.iterparse(str(xml), events=("start", "end")):
            if elem.tag == "rt_info":
                in_rt_info += 1 if event == "start" else -1
            elif event == "end" and in_rt_info and elem.tag == "chat_template":
                value = elem.get("value")
                return value if value else None
            elif event == "end" and not in_rt_info and elem.tag in ("layer", "edge"):
                elem.clear()  # keep memory flat on big tokenizer graphs
    except (OSError, ET.ParseError):
        return None
    return None


def _ir_context_length(folder: Path) -> Optional[int]:
    cfg = folder / "config.json"
    if not cfg.is_file():
        return None
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        v = data.get(key) if isinstance(data, dict) else None
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


# --- GGUF metadata -----------------------------------------------------------------------------------
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _read(f: BinaryIO, n: int) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise ValueError("truncated GGUF header")
    return b


def _read_str(f: BinaryIO, wide: bool) -> bytes:
    (n,) = struct.unpack("<Q" if wide else "<I", _read(f, 8 if wide else 4))
    if n > 1 << 28:
        raise ValueError("implausible GGUF string length")
    return _read(f, n)


def _read_value(f: BinaryIO, vtype: int, wide: bool, keep: bool) -> Any:
    if vtype in _SCALARS:
        fmt = _SCALARS[vtype]
        return struct.unpack(fmt, _read(f, struct.calcsize(fmt)))[0]
    if vtype == 8:
        s = _read_str(f, wide)
        return s.decode("utf-8", "replace") if keep else None
    if vtype == 9:
        (itype,) = struct.unpack("<I", _read(f, 4))
        (n,) = struct.unpack("<Q" if wide else "<I", _read(f, 8 if wide else 4))
        if itype in _SCALARS:
            f.seek(n * struct.calcsize(_SCALARS[itype]), os.SEEK_CUR)
            return None
        for _ in range(n):
            _read_value(f, itype, wide, False)
        return None
    raise ValueError(f"unknown GGUF value type {vtype}")


def gguf_metadata(path: Union[str, os.PathLike], wanted: Optional[set] = None) -> Dict[str, Any]:
    """Scalar and string metadata of a GGUF file (arrays skipped). ``wanted``: keep only these keys."""
    out: Dict[str, Any] = {}
    with open(path, "rb") as f:
        if _read(f, 4) != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        (version,) = struct.unpack("<I", _read(f, 4))
        wide = version >= 2
        if wide:
            _tensors, n_kv = struct.unpack("<QQ", _read(f, 16))
        else:
            _tensors, n_kv = struct.unpack("<II", _read(f, 8))
        for _ in range(n_kv):
            key = _read_str(f, wide).decode("utf-8", "replace")
            (vtype,) = struct.unpack("<I", _read(f, 4))
            keep = wanted is None or key in wanted or key == "general.architecture"
            value = _read_value(f, vtype, wide, keep)
            if keep and value is not None:
                out[key] = value
    return out


def model_info(path: Union[str, os.PathLike]) -> ModelInfo:
    p = Path(path)
    fmt = model_format(p)
    template: Optional[str] = None
    ctx: Optional[int] = None
    if fmt == "ir" or (p.is_dir() and (p / TOKENIZER_XML).is_file()):
        template = _ir_chat_template(p)
        ctx = _ir_context_length(p)
    elif fmt == "gguf":
        try:
            meta = gguf_metadata(p)
        except (OSError, ValueError, struct.error):
            meta = {}
        t = meta.get("tokenizer.chat_template")
        template = t if isinstance(t, str) and t else None
        arch = meta.get("general.architecture")
        c = meta.get(f"{arch}.context_length") if isinstance(arch, str) else None
        ctx = int(c) if isinstance(c, int) and c > 0 else None
    return ModelInfo(path=str(p), format=fmt, chat_template=template, context_length=ctx)


def template_supports_tools(template: Optional[str]) -> bool:
    return bool(template) and "tools" in template  # type: ignore[operator]


def template_supports_think(template: Optional[str]) -> bool:
    return bool(template) and ("enable_thinking" in template or "<think>" in template)  # type: ignore[operator]


def template_tool_format(template: Optional[str]) -> Optional[str]:
    """The tool-call output format a template teaches the model, when recognised."""
    if not template:
        return None
    if "<tool_call>" in template:
        return "hermes"
    if "[TOOL_CALLS]" in template:
        return "mistral"
    if "<|python_tag|>" in template or "ipython" in template:
        return "llama3"
    return None
