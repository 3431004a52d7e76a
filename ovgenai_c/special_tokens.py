"""A model folder's special tokens (pad, bos, eos: ids and strings) and chat template, read as GenAI reads them:
config.json, special_tokens_map.json, tokenizer_config.json, the chat-template files, then the tokenizer IR's
rt_info (which wins).

Plain files and XML only — no numpy, no OpenVINO: :class:`~ovgenai_c.Tokenizer` starts from it, and a pipeline
asks it for the eos token when generation_config.json sets none, without building a tokenizer (which imports numpy,
a module a re-initialised embedded interpreter cannot load twice).
"""
from __future__ import annotations

import json
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from . import errors
from .ir_folder import DETOKENIZER_XML, TOKENIZER_XML

_KINDS = ("pad", "bos", "eos")
_TEMPLATE_FILES = ("tokenizer_config.json", "processor_config.json", "chat_template.json", "chat_template.jinja")


@dataclass
class SpecialTokens:
    """Ids (-1: none) and strings ("": not known yet) of the pad, bos and eos tokens, and the chat template."""

    pad_id: int = -1
    bos_id: int = -1
    eos_id: int = -1
    pad: str = ""
    bos: str = ""
    eos: str = ""
    chat_template: str = ""


def read_json(path: Path) -> Optional[Dict[str, Any]]:
    """A JSON object file (None when the file is missing or holds no object); bad JSON is an InvalidJSONError."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise errors.InvalidJSONError(f"{path} is not valid JSON: {exc}") from None
    return data if isinstance(data, dict) else None


def template_from_file(path: Path) -> Optional[str]:
    """A chat template from tokenizer_config.json / processor_config.json / chat_template.json / .jinja."""
    if not path.is_file():
        return None
    if path.suffix == ".jinja":
        return path.read_text(encoding="utf-8")
    data = read_json(path)
    if not data or "chat_template" not in data:
        return None
    value = data["chat_template"]
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # [{"name": "default", "template": "..."}]
        for item in value:
            if isinstance(item, dict) and item.get("name") == "default" and isinstance(item.get("template"), str):
                return item["template"]
    warnings.warn(f"unsupported chat_template format in {path}", RuntimeWarning, stacklevel=3)
    return None


def rt_info_of(root: ET.Element) -> Dict[str, Any]:
    """An IR's rt_info (``root``: its <net> element): name -> value string, or a dict for nested entries
    (``<chat_template><default/>``)."""
    out: Dict[str, Any] = {}
    rt = root.find("rt_info")
    if rt is None:
        return out
    for el in rt:
        if el.tag == "info":
            continue
        if "value" in el.attrib:
            out[el.tag] = el.get("value")
        else:
            out[el.tag] = {child.tag: child.get("value") for child in el if "value" in child.attrib}
    return out


def read_special_tokens(folder: Optional[Path], rt: Mapping[str, Any]) -> SpecialTokens:
    """The special tokens of a model ``folder`` (None: a tokenizer made from memory, rt_info only) whose tokenizer IR
    has the rt_info ``rt``. Strings the files do not give stay empty (a tokenizer decodes them from their ids)."""
    tokens = SpecialTokens()
    if folder is not None:
        _read_files(folder, tokens)
    for key in _KINDS:
        if f"{key}_token_id" in rt:
            try:
                setattr(tokens, f"{key}_id", int(rt[f"{key}_token_id"]))
            except (TypeError, ValueError):
                pass
    rt_template = rt.get("chat_template")
    if isinstance(rt_template, str):
        tokens.chat_template = rt_template
    elif isinstance(rt_template, dict) and isinstance(rt_template.get("default"), str):
        tokens.chat_template = rt_template["default"]
    return tokens


def folder_eos_token_id(folder: Path) -> int:
    """The eos token id a :class:`~ovgenai_c.Tokenizer` of the IR ``folder`` reports (-1: none, or a tokenizer
    could not be made there), read from the files and the tokenizer IR's XML alone."""
    xml = folder / TOKENIZER_XML
    try:
        if xml.is_file():
            if not xml.with_suffix(".bin").is_file():
                return -1
            rt = rt_info_of(ET.parse(xml).getroot())
        elif (folder / DETOKENIZER_XML).is_file():
            rt = {}
        else:
            return -1
        return read_special_tokens(folder, rt).eos_id
    except (ET.ParseError, OSError, errors.GenAIError):
        return -1


def _read_files(folder: Path, tokens: SpecialTokens) -> None:
    """config.json ids, special_tokens_map.json / tokenizer_config.json strings, and the chat template of
    tokenizer_config.json, processor_config.json, chat_template.json, chat_template.jinja (last found wins)."""
    config = read_json(folder / "config.json") or {}
    for key in _KINDS:
        value = config.get(f"{key}_token_id")
        if isinstance(value, int) and not isinstance(value, bool):
            setattr(tokens, f"{key}_id", int(value))
    stm = read_json(folder / "special_tokens_map.json") or {}
    for key in _KINDS:
        v = stm.get(f"{key}_token")
        if isinstance(v, dict) and isinstance(v.get("content"), str) and not getattr(tokens, key):
            setattr(tokens, key, v["content"])
    _read_tokenizer_config(folder, tokens)
    for name in _TEMPLATE_FILES:
        found = template_from_file(folder / name)
        if found is not None:
            tokens.chat_template = found


def _read_tokenizer_config(folder: Path, tokens: SpecialTokens) -> None:
    t = tokens
    if min(t.pad_id, t.bos_id, t.eos_id) != -1 and t.pad and t.bos and t.eos:
        return
    data = read_json(folder / "tokenizer_config.json")
    if data is None:
        return
    for key in _KINDS:
        v = data.get(f"{key}_token")
        if not getattr(t, key):
            if isinstance(v, str):
                setattr(t, key, v)
            elif isinstance(v, dict) and isinstance(v.get("content"), str):
                setattr(t, key, v["content"])
    if not t.pad and t.eos:
        t.pad = t.eos
    if min(t.pad_id, t.bos_id, t.eos_id) != -1:
        return
    added = data.get("added_tokens_decoder")
    if isinstance(added, dict):
        for key, value in added.items():
            if not isinstance(value, dict) or "content" not in value:
                continue
            try:
                token_id = int(key)
            except ValueError:
                continue
            for name in _KINDS:
                if getattr(t, f"{name}_id") == -1 and value["content"] == getattr(t, name):
                    setattr(t, f"{name}_id", token_id)
    if t.pad_id == -1 and t.eos_id != -1:
        t.pad_id = t.eos_id
