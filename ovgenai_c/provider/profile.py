"""The per-model profile: a strict JSON file next to the model.

Where: ``<IR folder>/ovgenai_c.profile.json``, or for a GGUF file ``<name>.gguf`` next to it
``<name>.ovgenai_c.profile.json``. Every field is optional::

    {
      "context_length": 8192,              # int >= 1: the model's context window (tokens)
      "max_output_tokens": 512,            # int >= 1: upper bound of new tokens per answer
      "device": "CPU",                     # used when OVGENAI_DEVICE is not set
      "properties": {"KV_CACHE_PRECISION": "u8"},   # OpenVINO properties for the pipeline
      "options": {"temperature": 0, "num_predict": 128},   # default Ollama-style options
      "capabilities": {"chat": true, "prompt": true, "stream": true, "think": false, "tools": false,
                       "embed": false},    # override what is detected from the chat template
      "tool_call_format": "hermes",        # hermes | mistral | llama3 | json
      "draft_model": "../draft/ir",        # speculative decoding (bundled backend): a draft model's IR folder or
                                           # GGUF file, relative to this file's folder (its own profile's properties)
      "name": "...", "description": "..."  # free text
    }

Decoding is strict: unknown (e.g. misspelt) fields, wrong types, negative sizes and duplicate keys fail with a
:class:`ProfileError` naming the field and the file (and the closest known field for a typo).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Union

from .errors import OptionError, ProfileError, closest
from .options import check_options

PROFILE_NAME = "ovgenai_c.profile.json"
FIELDS = ("context_length", "max_output_tokens", "device", "properties", "options", "capabilities",
          "tool_call_format", "draft_model", "name", "description")
CAPABILITY_FLAGS = ("chat", "prompt", "stream", "think", "tools", "embed")
TOOL_CALL_FORMATS = ("hermes", "mistral", "llama3", "json")


@dataclass(frozen=True)
class Profile:
    """A decoded profile (all fields optional). ``path`` is the file it came from (None: no file)."""

    path: Optional[str] = None
    context_length: Optional[int] = None
    max_output_tokens: Optional[int] = None
    device: Optional[str] = None
    properties: Dict[str, Any] = field(default_factory=dict)
    options: Dict[str, Any] = field(default_factory=dict)
    capabilities: Dict[str, bool] = field(default_factory=dict)
    tool_call_format: Optional[str] = None
    draft_model: Optional[str] = None  # as written; draft_model_path() resolves it
    name: Optional[str] = None
    description: Optional[str] = None

    def draft_model_path(self) -> Optional[Path]:
        """The draft model's path (a relative one is relative to the profile's folder); None: no draft."""
        if not self.draft_model:
            return None
        p = Path(self.draft_model).expanduser()
        if not p.is_absolute() and self.path:
            p = Path(self.path).parent / p
        return Path(os.path.normpath(p))

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for k in FIELDS:
            v = getattr(self, k)
            if v not in (None, {}, []):
                out[k] = v
        return out


def profile_path_for(model_path: Union[str, os.PathLike]) -> Path:
    """Where the profile of a model (IR folder or GGUF file) lives."""
    p = Path(model_path)
    if p.is_dir():
        return p / PROFILE_NAME
    stem = p.name[:-5] if p.name.lower().endswith(".gguf") else p.name
    return p.parent / f"{stem}.{PROFILE_NAME}"


def _fail(path: str, field_name: str, what: str) -> ProfileError:
    return ProfileError(f"{path}: field {field_name!r} {what}", path=path, field=field_name)


def _size(path: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(path, name, f"must be a positive integer, got {type(value).__name__} {value!r}")
    if value < 0:
        raise _fail(path, name, f"must not be negative, got {value}")
    if value == 0:
        raise _fail(path, name, "must be at least 1, got 0")
    return value


def _text(path: str, name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _fail(path, name, f"must be a string, got {type(value).__name__} {value!r}")
    return value


def _no_duplicates(path: str):
    def hook(pairs):
        seen: Dict[str, Any] = {}
        for k, v in pairs:
            if k in seen:
                raise _fail(path, k, "appears twice")
            seen[k] = v
        return seen
    return hook


def _bad_constant(path: str):
    def hook(name: str) -> Any:
        raise ProfileError(f"{path}: {name} is not valid JSON", path=path)
    return hook


def parse_profile(data: Any, path: str) -> Profile:
    """Decode an already-parsed JSON value as a profile; ``path`` names the source in messages."""
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profile must be a JSON object, got {type(data).__name__}", path=path)
    kw: Dict[str, Any] = {}
    for name, value in data.items():
        if name not in FIELDS:
            raise _fail(path, name, f"is not a known profile field{closest(name, FIELDS)}; known fields: "
                                    f"{', '.join(FIELDS)}")
        if value is None:
            continue
        if name in ("context_length", "max_output_tokens"):
            kw[name] = _size(path, name, value)
        elif name in ("device", "name", "description", "draft_model"):
            kw[name] = _text(path, name, value)
            if name in ("device", "draft_model") and not value.strip():
                raise _fail(path, name, "must not be empty")
        elif name == "tool_call_format":
            v = _text(path, name, value)
            if v not in TOOL_CALL_FORMATS:
                raise _fail(path, name, f"must be one of {', '.join(TOOL_CALL_FORMATS)}, got {v!r}"
                                        f"{closest(v, TOOL_CALL_FORMATS)}")
            kw[name] = v
        elif name == "properties":
            if not isinstance(value, dict):
                raise _fail(path, name, f"must be an object of OpenVINO properties, got {type(value).__name__}")
            for k, v in value.items():
                if isinstance(v, (dict, list)) or v is None:
                    raise _fail(path, f"properties.{k}", f"must be a string, number or boolean, got {v!r}")
            kw[name] = dict(value)
        elif name == "capabilities":
            if not isinstance(value, dict):
                raise _fail(path, name, f"must be an object of flags, got {type(value).__name__}")
            caps: Dict[str, bool] = {}
            for k, v in value.items():
                if k not in CAPABILITY_FLAGS:
                    raise _fail(path, f"capabilities.{k}", f"is not a known capability{closest(k, CAPABILITY_FLAGS)}; "
                                                           f"known: {', '.join(CAPABILITY_FLAGS)}")
                if not isinstance(v, bool):
                    raise _fail(path, f"capabilities.{k}", f"must be true or false, got {type(v).__name__} {v!r}")
                if k == "embed" and v:
                    raise _fail(path, "capabilities.embed",
                                "cannot be true: the GenAI C API has no embedding pipeline")
                caps[k] = v
            kw[name] = caps
        elif name == "options":
            if not isinstance(value, dict):
                raise _fail(path, name, f"must be an object of generation options, got {type(value).__name__}")
            try:
                kw[name] = check_options(value)
            except OptionError as exc:
                opt = exc.option
                raise ProfileError(f"{path}: field 'options{'.' + opt if opt else ''}': {exc}", path=path,
                                   field=f"options.{opt}" if opt else "options") from None
    return Profile(path=path, **kw)


def load_profile(path: Union[str, os.PathLike]) -> Profile:
    """Read and strictly decode a profile file."""
    p = os.fspath(path)
    try:
        text = Path(p).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})", path=p) from None
    except OSError as exc:
        raise ProfileError(f"{p}: cannot read the profile: {exc.strerror or exc}", path=p) from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates(p), parse_constant=_bad_constant(p))
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{p}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=p) from None
    return parse_profile(data, p)


def profile_for(model_path: Union[str, os.PathLike]) -> Profile:
    """The model's profile, or an empty :class:`Profile` when the model has none."""
    pp = profile_path_for(model_path)
    if pp.is_file():
        return load_profile(pp)
    return Profile()
