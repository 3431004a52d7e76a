"""WhisperGenerationConfig: openvino_genai.WhisperGenerationConfig's fields, defaults and validation.

A :class:`~ovgenai_c.GenerationConfig` (every base field, as upstream's class derives from it) plus the Whisper
fields. What reaches C (whisper_generation_config.h has a setter for each): the token ids, max_initial_timestamp_index,
is_multilingual, language, task, return_timestamps, initial_prompt, hotwords, begin_suppress_tokens,
suppress_tokens. What does not: the base fields (max_new_tokens, eos, sampling...), lang_to_id, alignment_heads and
word_timestamps — the C ABI has no setter for them, so a pipeline call that needs them different from the model's
own config is refused by name (see :class:`~ovgenai_c.WhisperPipeline`); word_timestamps and the base fields reach
the bundled backend through its extras. Upstream's ``validate()`` rules and messages
are checked here, in Python, as the C ABI drops the C++ exception text.
"""
from __future__ import annotations

import copy as _copy
import json
import os
from typing import Any, Dict, Iterable, List, Optional, Tuple

from . import config as _config
from .config import INT64_MAX, INT64_MIN, SIZE_MAX, GenerationConfig, _read_json_fields
from .errors import ConfigError, InvalidParameterError

_INT64, _SIZE, _BOOL, _STR, _IDS = "int64", "size", "bool", "optional str", "ids"
# the fields whisper_generation_config.h sets, with upstream's defaults, in its header order
C_FIELDS: Dict[str, Tuple[str, Any]] = {
    "decoder_start_token_id": (_INT64, 50258),
    "pad_token_id": (_INT64, 50257),
    "translate_token_id": (_INT64, 50358),
    "transcribe_token_id": (_INT64, 50359),
    "prev_sot_token_id": (_INT64, 50361),
    "no_timestamps_token_id": (_INT64, 50363),
    "max_initial_timestamp_index": (_SIZE, 50),
    "is_multilingual": (_BOOL, True),
    "language": (_STR, None),
    "task": (_STR, None),
    "return_timestamps": (_BOOL, False),
    "initial_prompt": (_STR, None),
    "hotwords": (_STR, None),
    "begin_suppress_tokens": (_IDS, ()),
    "suppress_tokens": (_IDS, ()),
}
# Whisper fields with no C setter: held in Python (the pipeline refuses a call that needs them changed)
PYTHON_FIELDS: Dict[str, Any] = {"lang_to_id": {}, "word_timestamps": False, "alignment_heads": ()}
WHISPER_FIELDS = (*C_FIELDS, *PYTHON_FIELDS)
TASKS = ("transcribe", "translate")


def wrapped_language(language: str) -> str:
    """The lang_to_id key of a language: ``"en"`` → ``"<|en|>"`` (a wrapped one is kept), as upstream normalises."""
    if len(language) > 4 and language.startswith("<|") and language.endswith("|>"):
        return language
    return f"<|{language}|>"


def plain_language(language: str) -> str:
    """``"<|en|>"`` → ``"en"`` (a plain code is kept)."""
    return wrapped_language(language)[2:-2]


def _coerce(name: str, value: Any) -> Any:
    subject = f"WhisperGenerationConfig.{name}"
    if name == "lang_to_id":
        if not isinstance(value, dict):
            raise InvalidParameterError(f"{subject} must be a dict of str to int, not {type(value).__name__}")
        out: Dict[str, int] = {}
        for k, v in value.items():
            if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int):
                raise InvalidParameterError(f"{subject} must map str to int, got {k!r}: {v!r}")
            out[k] = int(v)
        return out
    if name == "word_timestamps":
        if not isinstance(value, bool):
            raise InvalidParameterError(f"{subject} must be a bool, not {type(value).__name__}")
        return value
    if name == "alignment_heads":
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise InvalidParameterError(f"{subject} must be a list of (layer, head) pairs")
        pairs = []
        for pair in value:
            try:
                layer, head = pair
            except (TypeError, ValueError):
                raise InvalidParameterError(f"{subject} items must be (layer, head) pairs, got {pair!r}") from None
            for x in (layer, head):
                if isinstance(x, bool) or not isinstance(x, int) or x < 0:
                    raise InvalidParameterError(f"{subject} indices must be ints >= 0, got {pair!r}")
            pairs.append((int(layer), int(head)))
        return tuple(pairs)
    kind = C_FIELDS[name][0]
    if kind == _BOOL:
        if not isinstance(value, bool):
            raise InvalidParameterError(f"{subject} must be a bool, not {type(value).__name__}")
        return value
    if kind in (_INT64, _SIZE):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidParameterError(f"{subject} must be an int, not {type(value).__name__}")
        lo, hi = (0, SIZE_MAX) if kind == _SIZE else (INT64_MIN, INT64_MAX)
        if not lo <= value <= hi:
            raise InvalidParameterError(f"{subject} must be in [{lo}, {hi}], got {value}")
        return int(value)
    if kind == _STR:
        if value is None:
            return None
        if not isinstance(value, str):
            raise InvalidParameterError(f"{subject} must be a str or None, not {type(value).__name__}")
        if "\0" in value:
            raise InvalidParameterError(f"{subject} contains a NUL character")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidParameterError(f"{subject} is not valid Unicode text: {exc.reason}") from None
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidParameterError(f"{subject} must be a list of int, not {type(value).__name__}")
    ids = []
    for t in value:
        if isinstance(t, bool) or not isinstance(t, int):
            raise InvalidParameterError(f"{subject} items must be int, got {type(t).__name__}")
        if not INT64_MIN <= t <= INT64_MAX:
            raise InvalidParameterError(f"{subject} item {t} does not fit int64")
        ids.append(int(t))
    return tuple(ids)


def _read_whisper_json(path: str) -> Dict[str, Any]:
    """The Whisper keys of a generation_config.json, as upstream's WhisperGenerationConfig(json_path) reads them."""
    with open(path, "r", encoding="utf-8") as f:
        data = json.load(f)
    out: Dict[str, Any] = {}
    for key in ("begin_suppress_tokens", "suppress_tokens", "decoder_start_token_id", "pad_token_id",
                "no_timestamps_token_id", "max_initial_timestamp_index", "prev_sot_token_id", "is_multilingual"):
        if data.get(key) is not None:
            out[key] = data[key]
    tasks = data.get("task_to_id")
    if out.get("is_multilingual", C_FIELDS["is_multilingual"][1]) and isinstance(tasks, dict):
        for task in TASKS:
            if tasks.get(task) is not None:
                out[f"{task}_token_id"] = tasks[task]
    for key in ("lang_to_id", "alignment_heads"):
        if data.get(key) is not None:
            out[key] = data[key]
    return out


class WhisperGenerationConfig(GenerationConfig):
    """Whisper generation parameters (openvino_genai.WhisperGenerationConfig's names and defaults).

    ``WhisperGenerationConfig(json_path)`` reads a model's generation_config.json (base and Whisper keys, as
    upstream); keyword arguments set fields. ``validate()`` applies upstream's rules with its messages.
    """

    _KIND = "Whisper "

    # the Whisper fields, for type checkers and editors (as GenerationConfig's; read through __getattr__)
    decoder_start_token_id: int
    pad_token_id: int
    translate_token_id: int
    transcribe_token_id: int
    prev_sot_token_id: int
    no_timestamps_token_id: int
    max_initial_timestamp_index: int
    is_multilingual: bool
    language: Optional[str]
    task: Optional[str]
    return_timestamps: bool
    initial_prompt: Optional[str]
    hotwords: Optional[str]
    begin_suppress_tokens: List[int]
    suppress_tokens: List[int]
    lang_to_id: Dict[str, int]
    word_timestamps: bool
    alignment_heads: List[Tuple[int, int]]
    # fields a subclass adds (name -> default), held beside the Whisper ones and never sent to C
    _EXTRA_FIELDS: Dict[str, Any] = {}

    def __init__(self, json_path: Optional[os.PathLike] = None, **kwargs: Any) -> None:
        GenerationConfig.__init__(self)
        whisper = {name: default for name, (_, default) in C_FIELDS.items()}
        whisper.update(_copy.deepcopy(PYTHON_FIELDS))
        whisper.update(_copy.deepcopy(self._EXTRA_FIELDS))
        object.__setattr__(self, "_whisper", whisper)
        self._extra["apply_chat_template"] = False  # upstream's WhisperGenerationConfig turns it off
        if json_path is not None:
            path = os.fspath(json_path)
            base = _read_json_fields(path)
            try:
                whisper_keys = _read_whisper_json(path)
                self.update_generation_config(**base, **whisper_keys)
            except (InvalidParameterError, TypeError) as exc:
                raise ConfigError(f"generation config {path}: {exc}") from None
        if kwargs:
            self.update_generation_config(**kwargs)

    # --- attribute access -------------------------------------------------------------------------
    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(WHISPER_FIELDS) | set(self._EXTRA_FIELDS))

    def __getattr__(self, name: str) -> Any:
        whisper = object.__getattribute__(self, "__dict__").get("_whisper")
        if whisper is not None and name in whisper:
            v = whisper[name]
            if isinstance(v, tuple):
                return list(v)
            return dict(v) if isinstance(v, dict) else v
        try:
            return GenerationConfig.__getattr__(self, name)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name in WHISPER_FIELDS or name in self._EXTRA_FIELDS:
            self._whisper[name] = self._coerce_field(name, value)
            return
        try:
            GenerationConfig.__setattr__(self, name, value)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def _coerce_field(self, name: str, value: Any) -> Any:
        return _coerce(name, value)

    def update_generation_config(self, **kwargs: Any) -> None:
        """Set several fields at once (Whisper and base ones); unknown names raise a TypeError naming them."""
        whisper = {k: kwargs.pop(k) for k in list(kwargs) if k in WHISPER_FIELDS or k in self._EXTRA_FIELDS}
        unknown = [k for k in kwargs if k not in _config.FIELDS and k not in _config.PYTHON_FIELDS]
        if unknown:
            raise TypeError(f"unknown {type(self).__name__} field(s): {', '.join(sorted(unknown))}")
        for key, value in whisper.items():
            setattr(self, key, value)
        GenerationConfig.update_generation_config(self, **kwargs)

    update = update_generation_config

    def copy(self) -> "WhisperGenerationConfig":
        """An independent copy (of the same class)."""
        new = type(self).__new__(type(self))
        object.__setattr__(new, "_values", dict(self._values))
        object.__setattr__(new, "_extra", dict(self._extra))
        object.__setattr__(new, "_whisper", _copy.deepcopy(self._whisper))
        return new

    __copy__ = copy

    def __deepcopy__(self, memo: Any) -> "WhisperGenerationConfig":
        return self.copy()

    def to_dict(self) -> Dict[str, Any]:
        """Every field and its value."""
        d = GenerationConfig.to_dict(self)
        d.update((k, getattr(self, k)) for k in (*WHISPER_FIELDS, *self._EXTRA_FIELDS))
        return d

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WhisperGenerationConfig) and GenerationConfig.__eq__(self, other) and \
            self._whisper == other._whisper

    def __repr__(self) -> str:
        base = GenerationConfig.__repr__(self)[len("GenerationConfig("):-1]
        defaults = {**{k: d for k, (_, d) in C_FIELDS.items()}, **PYTHON_FIELDS, **self._EXTRA_FIELDS}
        changed = ", ".join(f"{k}={getattr(self, k)!r}" for k, v in self._whisper.items() if v != defaults[k])
        return f"{type(self).__name__}({', '.join(x for x in (base, changed) if x)})"

    # --- the C side -------------------------------------------------------------------------------
    def c_values(self) -> Dict[str, Any]:
        """The fields whisper_generation_config.h sets, as plain values (for :mod:`ovgenai_c._capi`). ``language``
        goes as its lang_to_id key (``"de"`` → ``"<|de|>"``): GenAI up to 2026.3 validates and looks the language up
        as given (a plain code fails validate(), and the C ABI drops that message), later releases wrap a plain code
        themselves; Python's validate() accepts both forms, as GenAI >= 2026.4 does."""
        values = {name: self._whisper[name] for name in C_FIELDS}
        values["word_timestamps"] = self._whisper["word_timestamps"]  # (set through the bundled backend's extra)
        if values["language"] is not None:
            values["language"] = wrapped_language(values["language"])
        return values

    def base_values(self) -> Dict[str, Any]:
        """The base GenerationConfig fields that whisper_generation_config.h cannot set (the bundled backend's extra
        sets them all at once)."""
        return dict(self._values)

    def python_only_state(self) -> Dict[str, Any]:
        """Every field the C ABI cannot set: the base ones and lang_to_id / word_timestamps / alignment_heads."""
        return {**self._values, **self._extra, **{k: self._whisper[k] for k in PYTHON_FIELDS}}

    # --- validation -------------------------------------------------------------------------------
    def _speech_problems(self) -> List[str]:
        """The rules upstream's Whisper and ASR configs share beyond the base ones: one sequence, no assisting."""
        p = []
        if self._values["num_return_sequences"] != 1:
            p.append(f"'num_return_sequences' must be 1. Provided: {self._values['num_return_sequences']}.")
        if self.is_assisting_generation():
            p.append("Assisted generation is not supported.")
        return p

    def problems(self, eos_from_model: bool = False) -> List[str]:
        """Every rule of upstream's WhisperGenerationConfig::validate() this config breaks (base rules first)."""
        p = GenerationConfig.problems(self, eos_from_model)
        w = self._whisper
        if w["is_multilingual"]:
            if not w["lang_to_id"]:
                p.append("'lang_to_id' map must be provided for multilingual models (initialise it from the model's "
                         "generation_config.json: WhisperGenerationConfig(models_path / 'generation_config.json') or "
                         "pipeline.get_generation_config())")
            if w["language"] is not None and wrapped_language(w["language"]) not in w["lang_to_id"]:
                p.append(f"'language' {w['language']} must be provided in 'lang_to_id' map.")
            if w["task"] is not None and w["task"] not in TASKS:
                p.append(f"'task' mast be 'transcribe' or 'translate'. Task provided: '{w['task']}'.")
        else:
            if w["language"] is not None:
                p.append("Cannot specify 'language' for not multilingual model.")
            if w["task"] is not None:
                p.append("Cannot specify 'task' for not multilingual model.")
        p += self._speech_problems()
        if w["word_timestamps"] and not w["alignment_heads"]:
            p.append("'word_timestamps' can be true only when 'alignment_heads' is set and not empty.")
        return p



__all__ = ["WhisperGenerationConfig", "C_FIELDS", "PYTHON_FIELDS", "WHISPER_FIELDS", "wrapped_language",
           "plain_language"]
