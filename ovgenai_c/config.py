"""GenerationConfig: the Python object is the source of truth (the C ABI has one getter), materialised into a
native ``ov_genai_generation_config`` for each call that needs one (by :mod:`ovgenai_c._capi.generation_config`)."""
from __future__ import annotations

import enum
import json
import math
import numbers
import operator
import os
import struct
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterable, List, Optional, Set

from .errors import ConfigError, InvalidParameterError

SIZE_MAX = 2**64 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class StopCriteria(enum.IntEnum):
    """When beam search stops (``StopCriteria`` in the C ABI)."""

    EARLY = 0
    HEURISTIC = 1
    NEVER = 2


# field -> (kind, default, C setter suffix). Order = the order setters are applied (stop_token_ids before eos).
_SIZE, _BOOL, _FLOAT, _STRS, _IDS, _INT64, _CRIT = "size", "bool", "float", "strs", "ids", "int64", "criteria"
_OPT_SIZE = "optional size"  # a size_t or None (unset: std::optional in GenAI 2026.4, its setter never called)
FIELDS: Dict[str, tuple] = {
    "max_new_tokens": (_SIZE, SIZE_MAX),
    "max_length": (_SIZE, SIZE_MAX),
    "ignore_eos": (_BOOL, False),
    "min_new_tokens": (_SIZE, 0),
    "echo": (_BOOL, False),
    "logprobs": (_SIZE, 0),
    "stop_strings": (_STRS, frozenset()),
    "include_stop_str_in_output": (_BOOL, False),
    "stop_token_ids": (_IDS, frozenset()),
    "num_beam_groups": (_SIZE, 1),
    "num_beams": (_SIZE, 1),
    "diversity_penalty": (_FLOAT, 0.0),
    "length_penalty": (_FLOAT, 1.0),
    "num_return_sequences": (_SIZE, 1),
    "no_repeat_ngram_size": (_SIZE, SIZE_MAX),
    "stop_criteria": (_CRIT, StopCriteria.HEURISTIC),
    "temperature": (_FLOAT, 1.0),
    "top_p": (_FLOAT, 1.0),
    "top_k": (_SIZE, SIZE_MAX),
    "min_p": (_FLOAT, 0.0),
    "do_sample": (_BOOL, False),
    "repetition_penalty": (_FLOAT, 1.0),
    "presence_penalty": (_FLOAT, 0.0),
    "frequency_penalty": (_FLOAT, 0.0),
    "rng_seed": (_SIZE, 0),
    "assistant_confidence_threshold": (_FLOAT, 0.0),
    "num_assistant_tokens": (_OPT_SIZE, None),  # None as openvino_genai 2026.4 (unset; 0 in older releases)
    "max_ngram_size": (_SIZE, 0),
    "eos_token_id": (_INT64, -1),
}
# Fields of openvino_genai.GenerationConfig that the C ABI has no setter for: held in Python with upstream's
# defaults so ported code can read and set them; a call that needs a non-default one is refused by name
# (apply_chat_template=False reaches the bundled backend through its extra).
PYTHON_FIELDS: Dict[str, Any] = {
    "apply_chat_template": True,
    "adapters": None,
    "structured_output_config": None,
    "parsers": (),
    "branching_factor": 1,
    "tree_depth": 0,
    "pruning_ratio": 0,
    "relevance_weight": 0.5,
    "return_omni_outputs": False,
}
PYTHON_ONLY = tuple(PYTHON_FIELDS)
_CARRIED = frozenset(("apply_chat_template", "parsers"))  # Python-only fields that a call still honours
_PYTHON_FIELD_TYPES: Dict[str, tuple] = {
    "apply_chat_template": (bool,), "return_omni_outputs": (bool,),
    "branching_factor": (int,), "tree_depth": (int,), "pruning_ratio": (int,), "relevance_weight": (int, float),
}


def _number_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@dataclass(frozen=True)
class Interval:
    """A range of numbers, open or closed at each end; ``str()`` is how messages state it
    (``"> 0"``, ``">= 0"``, ``"in (0, 1]"``)."""

    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False

    def __contains__(self, value: float) -> bool:
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below

    def __str__(self) -> str:
        if self.hi == math.inf:
            return f"{'>' if self.lo_open else '>='} {_number_text(self.lo)}"
        return (f"in {'(' if self.lo_open else '['}{_number_text(self.lo)}, {_number_text(self.hi)}"
                f"{')' if self.hi_open else ']'}")

    def including_lo(self) -> "Interval":
        """The same range with its lower bound included (e.g. Ollama's ``temperature: 0`` = greedy)."""
        return replace(self, lo_open=False)


WHEN_SAMPLING = "when sampling"  # the rule applies when do_sample is set
WITHOUT_BEAMS = "without beam search"  # the rule applies when num_beams <= 1


@dataclass(frozen=True)
class RangeRule:
    """A range upstream's ``validate()`` requires of a float field, and when it applies."""

    interval: Interval
    applies: str  # WHEN_SAMPLING or WITHOUT_BEAMS

    def message(self, name: str, value: float) -> str:
        when = f" {WHEN_SAMPLING}" if self.applies == WHEN_SAMPLING else ""
        return f"{name} must be {self.interval}{when}, got {value}"


# The value ranges of upstream's GenerationConfig::validate(), in the order problems() reports them; the
# provider's Ollama-style option checks use the same table (provider/options.py).
RANGE_RULES: Dict[str, RangeRule] = {
    "frequency_penalty": RangeRule(Interval(-2.0, 2.0), WITHOUT_BEAMS),
    "presence_penalty": RangeRule(Interval(-2.0, 2.0), WITHOUT_BEAMS),
    "repetition_penalty": RangeRule(Interval(0.0, lo_open=True), WITHOUT_BEAMS),
    "top_p": RangeRule(Interval(0.0, 1.0, lo_open=True), WHEN_SAMPLING),
    "temperature": RangeRule(Interval(0.0, lo_open=True), WHEN_SAMPLING),
    "min_p": RangeRule(Interval(0.0, 1.0, hi_open=True), WHEN_SAMPLING),
}


def field_kind(name: str) -> str:
    """The kind of a C-backed field: ``"size"``, ``"optional size"`` (an int or None), ``"int64"``, ``"float"``,
    ``"bool"``, ``"strs"``, ``"ids"`` or ``"criteria"``. Raises KeyError for a name that is not one."""
    return FIELDS[name][0]


def check_value(name: str, value: Any, subject: Optional[str] = None) -> Any:
    """Check ``value`` for the field ``name`` as assigning it does (type and representable range: size_t,
    int64, a finite C float...) and return the stored form. Messages name ``subject`` (default
    ``GenerationConfig.<name>``), so another layer can name the option its user typed."""
    return _coerce(name, FIELDS[name][0], value, subject or f"GenerationConfig.{name}")


def _as_int(value: Any) -> Optional[int]:
    """``value`` as an int field takes it: an int or a numpy integer (anything with ``__index__``), not a bool;
    else None."""
    if isinstance(value, bool) or _is_numpy_bool(value):
        return None
    if isinstance(value, int):
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        return None


def _is_numpy_bool(value: Any) -> bool:
    return type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool")


def _coerce(name: str, kind: str, value: Any, subject: str) -> Any:
    """Check the type and range of one field value; return the stored form. numpy scalars are taken as the Python
    numbers they stand for (as pybind's attributes take them); a bool for a number, a number for a bool, None and
    text are refused (pybind's keyword arguments refuse them too)."""
    if kind == _BOOL:
        if isinstance(value, bool) or _is_numpy_bool(value):
            return bool(value)
        raise InvalidParameterError(f"{subject} must be a bool, not {type(value).__name__}")
    if kind == _OPT_SIZE:
        if value is None:
            return None
        if _as_int(value) is None:
            raise InvalidParameterError(f"{subject} must be an int or None, not {type(value).__name__}")
        kind = _SIZE
    if kind in (_SIZE, _INT64):
        as_int = _as_int(value)
        if as_int is None:
            raise InvalidParameterError(f"{subject} must be an int, not {type(value).__name__}")
        value = as_int
        lo, hi = (0, SIZE_MAX) if kind == _SIZE else (INT64_MIN, INT64_MAX)
        if name == "eos_token_id" and value < -1:
            raise InvalidParameterError(f"{subject} must be -1 (unset) or a token id >= 0, got {value}")
        if kind == _SIZE and value < 0:
            raise InvalidParameterError(f"{subject} must be >= 0, got {value}")
        if not lo <= value <= hi:
            raise InvalidParameterError(f"{subject} must be in [{lo}, {hi}], got {value}")
        return value
    if kind == _FLOAT:
        if isinstance(value, bool) or _is_numpy_bool(value) or not isinstance(value, numbers.Real):
            raise InvalidParameterError(f"{subject} must be a number, not {type(value).__name__}")
        value = float(value)
        if not math.isfinite(value):
            raise InvalidParameterError(f"{subject} must be a finite number, got {value}")
        if abs(value) > 3.4e38:
            raise InvalidParameterError(f"{subject} does not fit a C float: {value}")
        # stored as the C side stores it (float32), so Python's checks see the value C will see
        return struct.unpack("f", struct.pack("f", value))[0]
    if kind == _CRIT:
        try:
            return StopCriteria(value)
        except ValueError:
            raise InvalidParameterError(f"{subject} must be a StopCriteria, got {value!r}") from None
    if kind == _STRS:
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise InvalidParameterError(f"{subject} must be a set of str, not {type(value).__name__}")
        out = set()
        for s in value:
            if not isinstance(s, str):
                raise InvalidParameterError(f"{subject} items must be str, got {type(s).__name__}")
            if s == "":
                raise InvalidParameterError(f"{subject} must not contain an empty string")
            if "\0" in s:
                raise InvalidParameterError(f"{subject} item {s!r} contains a NUL character")
            try:
                s.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidParameterError(f"{subject} item {s!r} is not valid Unicode text: {exc}") from None
            out.add(s)
        return frozenset(out)
    if kind == _IDS:
        if not isinstance(value, Iterable) or isinstance(value, (str, bytes)):
            raise InvalidParameterError(f"{subject} must be a set of int, not {type(value).__name__}")
        out_ids = set()
        for t in value:
            if isinstance(t, bool) or not isinstance(t, int):
                raise InvalidParameterError(f"{subject} items must be int, got {type(t).__name__}")
            if not INT64_MIN <= t <= INT64_MAX:
                raise InvalidParameterError(f"{subject} item {t} does not fit int64")
            out_ids.add(int(t))
        return frozenset(out_ids)
    raise AssertionError(kind)  # pragma: no cover


class GenerationConfig:
    """Generation parameters, with the C API's defaults. Same field names as ``openvino_genai.GenerationConfig``.

    ``GenerationConfig(json_path)`` reads a generation_config.json; keyword arguments set fields.
    """

    _KIND = ""  # what validate()'s message calls the config ("Whisper " for WhisperGenerationConfig...)

    # The fields, for type checkers and editors (annotations only: the values live in the config's own tables and
    # are read through __getattr__; tests/binding/test_config_and_errors.py keeps this list equal to FIELDS and
    # PYTHON_FIELDS, and each type to what the field reads back). Sizes read SIZE_MAX where unset.
    max_new_tokens: int
    max_length: int
    ignore_eos: bool
    min_new_tokens: int
    echo: bool
    logprobs: int
    stop_strings: Set[str]
    include_stop_str_in_output: bool
    stop_token_ids: Set[int]
    num_beam_groups: int
    num_beams: int
    diversity_penalty: float
    length_penalty: float
    num_return_sequences: int
    no_repeat_ngram_size: int
    stop_criteria: StopCriteria
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    do_sample: bool
    repetition_penalty: float
    presence_penalty: float
    frequency_penalty: float
    rng_seed: int
    assistant_confidence_threshold: float
    num_assistant_tokens: Optional[int]
    max_ngram_size: int
    eos_token_id: int
    apply_chat_template: bool
    adapters: Any
    structured_output_config: Any
    parsers: List[Any]
    branching_factor: int
    tree_depth: int
    pruning_ratio: int
    relevance_weight: float
    return_omni_outputs: bool

    def __init__(self, json_path: Optional[os.PathLike] = None, **kwargs: Any) -> None:
        values = {name: default for name, (_, default) in FIELDS.items()}
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_extra", dict(PYTHON_FIELDS))
        if json_path is not None:
            self.update_generation_config(**_read_json_fields(os.fspath(json_path)))
        self.update_generation_config(**kwargs)

    # --- attribute access -------------------------------------------------------------------------
    def __dir__(self) -> List[str]:
        """The fields too (they live in the config's own tables), so dir() and completion list them."""
        return sorted(set(super().__dir__()) | set(FIELDS) | set(PYTHON_FIELDS))

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            v = values[name]
            return set(v) if isinstance(v, frozenset) else v
        extra = object.__getattribute__(self, "_extra")
        if name in extra:
            v = extra[name]
            return list(v) if name == "parsers" else v
        raise AttributeError(f"GenerationConfig has no field {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in PYTHON_FIELDS:
            types = _PYTHON_FIELD_TYPES.get(name)
            if types is not None and (isinstance(value, bool) != (bool in types) or not isinstance(value, types)):
                raise InvalidParameterError(f"GenerationConfig.{name} must be a {types[0].__name__}, "
                                            f"not {type(value).__name__}")
            if name == "parsers":
                from .parsers import check_parsers

                value = check_parsers(value)
            self._extra[name] = value
            return
        if name not in FIELDS:
            raise AttributeError(f"GenerationConfig has no field {name!r}")
        self._values[name] = check_value(name, value)

    def set_eos_token_id(self, token_id: int) -> None:
        """Set the EOS token and add it to the stop tokens (as the C++ API does). Assigning ``eos_token_id``
        alone does not touch ``stop_token_ids`` (as in openvino_genai; validate() then asks for both)."""
        self.eos_token_id = token_id
        self._add_eos_to_stop_ids()

    def _add_eos_to_stop_ids(self) -> None:
        eos = self._values["eos_token_id"]
        if eos != -1:
            self._values["stop_token_ids"] = frozenset(self._values["stop_token_ids"] | {eos})

    def update_generation_config(self, **kwargs: Any) -> None:
        """Set several fields at once; unknown names raise a TypeError naming them. As upstream's
        update_generation_config, a set eos_token_id is then also a stop token."""
        unknown = [k for k in kwargs if k not in FIELDS and k not in PYTHON_FIELDS]
        if unknown:
            raise TypeError(f"unknown GenerationConfig field(s): {', '.join(sorted(unknown))}")
        for key, value in kwargs.items():
            setattr(self, key, value)
        self._add_eos_to_stop_ids()

    update = update_generation_config

    def copy(self) -> "GenerationConfig":
        """An independent copy."""
        new = GenerationConfig.__new__(GenerationConfig)
        object.__setattr__(new, "_values", dict(self._values))
        object.__setattr__(new, "_extra", dict(self._extra))
        return new

    __copy__ = copy

    def __deepcopy__(self, memo: Any) -> "GenerationConfig":
        return self.copy()

    def to_dict(self) -> Dict[str, Any]:
        """Every field and its value."""
        d = {k: (sorted(v) if isinstance(v, frozenset) else v) for k, v in self._values.items()}
        d["stop_criteria"] = StopCriteria(d["stop_criteria"]).name
        d.update((k, list(v) if k == "parsers" else v) for k, v in self._extra.items())
        return d

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GenerationConfig) and self._values == other._values and \
            self._extra == other._extra

    def unsupported_fields(self) -> List[str]:
        """Fields set away from upstream's default that no C ABI setter carries (named in refusals); ``parsers`` run
        in Python on the finished text, and ``apply_chat_template`` reaches the bundled backend through its extra."""
        return [k for k, v in self._extra.items() if k not in _CARRIED and v != PYTHON_FIELDS[k]]

    def parser_chain(self) -> tuple:
        """The parsers to run over each finished text (``parsers``, as a tuple)."""
        return self._extra["parsers"]

    def __repr__(self) -> str:
        changed = {k: v for k, v in self._values.items() if v != FIELDS[k][1]}
        inner = ", ".join(f"{k}={sorted(v) if isinstance(v, frozenset) else v!r}" for k, v in changed.items())
        return f"GenerationConfig({inner})"

    # --- kinds of decoding --------------------------------------------------------------------------
    def is_beam_search(self) -> bool:
        return self._values["num_beams"] > 1

    def expected_sequences(self) -> int:
        """How many texts a call with this config returns: num_return_sequences with sampling or beam search, else
        one (plain reads of the values: this runs on every call)."""
        v = self._values
        return v["num_return_sequences"] if (v["do_sample"] or v["num_beams"] > 1) else 1

    def streams_one_sequence(self) -> bool:
        """Whether GenAI accepts a streamer with this config: one sequence, no beam search."""
        v = self._values
        return v["num_return_sequences"] == 1 and not v["num_beams"] > 1

    def is_tree_search(self) -> bool:
        return self._extra["tree_depth"] > 0

    def is_greedy_decoding(self) -> bool:
        return not self._values["do_sample"] and not self.is_beam_search() and not self.is_tree_search()

    def is_multinomial(self) -> bool:
        return self._values["do_sample"]

    def is_assisting_generation(self) -> bool:
        return self._values["assistant_confidence_threshold"] > 0 or (self._values["num_assistant_tokens"] or 0) > 0

    def is_prompt_lookup(self) -> bool:
        return self._values["max_ngram_size"] > 0 and (self._values["num_assistant_tokens"] or 0) > 0

    def is_structured_output_generation(self) -> bool:
        return self._extra["structured_output_config"] is not None

    def get_max_new_tokens(self, prompt_length: int = 0) -> int:
        """max_new_tokens if set, else max_length minus the prompt length."""
        v = self._values
        if v["max_new_tokens"] != SIZE_MAX:
            return v["max_new_tokens"]
        return max(v["max_length"] - prompt_length, 0) if v["max_length"] != SIZE_MAX else SIZE_MAX

    # --- validation -------------------------------------------------------------------------------
    def problems(self, eos_from_model: bool = False) -> List[str]:
        """Every rule of upstream's ``validate()`` this config breaks, as messages (empty when valid).

        ``eos_from_model``: the pipeline fills an unset eos token from the model before validating.
        """
        v = self._values
        p: List[str] = []
        unlimited = v["max_new_tokens"] == SIZE_MAX and v["max_length"] == SIZE_MAX
        has_eos = v["eos_token_id"] != -1 or eos_from_model
        if v["num_return_sequences"] == 0:
            p.append("num_return_sequences must be greater than 0")
        if v["eos_token_id"] != -1 and v["eos_token_id"] not in v["stop_token_ids"]:
            p.append(f"stop_token_ids must contain eos_token_id ({v['eos_token_id']}); use set_eos_token_id()")
        bad_ids = sorted(t for t in v["stop_token_ids"] if t < 0)
        if bad_ids:
            p.append(f"stop_token_ids must be non-negative, got {bad_ids}")
        if v["ignore_eos"] and unlimited:
            p.append("ignore_eos=True needs max_new_tokens or max_length, or generation never ends")
        if not has_eos and not v["stop_token_ids"] and not v["stop_strings"] and unlimited:
            p.append("no eos_token_id, stop_token_ids or stop_strings and unlimited max_new_tokens/max_length: "
                     "generation would never end")
        if v["max_new_tokens"] == 0 and not v["echo"]:
            p.append("max_new_tokens must be greater than 0 (unless echo=True)")
        if v["max_new_tokens"] != SIZE_MAX and v["min_new_tokens"] > v["max_new_tokens"]:
            p.append(f"min_new_tokens ({v['min_new_tokens']}) must not exceed max_new_tokens ({v['max_new_tokens']})")
        if v["num_return_sequences"] > 1 and not v["do_sample"] and v["num_beams"] <= 1:
            p.append("num_return_sequences > 1 needs do_sample=True or num_beams > 1")
        beams = v["num_beams"] > 1
        for name, rule in RANGE_RULES.items():
            applies = v["do_sample"] if rule.applies == WHEN_SAMPLING else not beams
            if applies and v[name] not in rule.interval:
                p.append(rule.message(name, v[name]))
        assistant_tokens = v["num_assistant_tokens"] or 0  # None (unset) counts as 0, as in GenAI's validate()
        assisting = v["assistant_confidence_threshold"] > 0.0 or assistant_tokens > 0
        if assisting:
            if v["num_beams"] > 1 or v["num_return_sequences"] > 1:
                p.append("assisted generation (assistant_confidence_threshold / num_assistant_tokens) works only "
                         "with one sequence and without beam search")
            if v["assistant_confidence_threshold"] != 0.0 and assistant_tokens != 0:
                p.append("set either assistant_confidence_threshold or num_assistant_tokens, not both")
        if v["max_ngram_size"] != 0 and assistant_tokens == 0:
            p.append("max_ngram_size (prompt lookup) needs num_assistant_tokens > 0")
        if v["num_beams"] > 1:
            if v["num_beam_groups"] == 0 or v["num_beams"] % v["num_beam_groups"] != 0:
                p.append(f"num_beams ({v['num_beams']}) must be divisible by num_beam_groups ({v['num_beam_groups']})")
            if v["num_beams"] < v["num_return_sequences"]:
                p.append(f"num_beams ({v['num_beams']}) must be at least num_return_sequences ({v['num_return_sequences']})")
            if v["do_sample"]:
                p.append("beam search (num_beams > 1) cannot be combined with do_sample=True")
            if v["no_repeat_ngram_size"] == 0:
                p.append("no_repeat_ngram_size must be greater than 0 with beam search")
            if v["frequency_penalty"] != 0.0 or v["presence_penalty"] != 0.0 or v["repetition_penalty"] != 1.0:
                p.append("beam search supports no frequency/presence penalty and repetition_penalty 1.0")
            if v["diversity_penalty"] != 0.0 and v["num_beam_groups"] <= 1:
                p.append("diversity_penalty needs num_beam_groups > 1")
            if v["num_beam_groups"] > 1 and v["diversity_penalty"] == 0.0:
                p.append("num_beam_groups > 1 needs a non-zero diversity_penalty")
        return p

    def validate(self, eos_from_model: bool = False) -> None:
        """Raise :class:`ConfigError` listing every broken rule (the checks upstream's validate() makes)."""
        p = self.problems(eos_from_model)
        if p:
            raise ConfigError(f"invalid {self._KIND}generation config: " + "; ".join(p))

    # --- native -----------------------------------------------------------------------------------
    def fingerprint(self) -> Optional[tuple]:
        """A hashable value, equal for configs whose fields are all equal (None if a field holds an unhashable
        value): what a cache of the native form is keyed on."""
        key = (tuple(self._values.values()), tuple(self._extra.values()))
        try:
            hash(key)
        except TypeError:
            return None
        return key

    def non_default_items(self) -> List[tuple]:
        """(field, value) pairs that differ from the C defaults, in setter order."""
        return [(k, v) for k, v in self._values.items() if v != FIELDS[k][1]]


# JSON keys of generation_config.json that map onto fields
def _read_json_fields(path: str) -> Dict[str, Any]:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"generation config file not found: {path}")
    try:
        with open(path, "r", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"cannot read generation config {path}: {type(exc).__name__}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"generation config {path} must hold a JSON object")
    out: Dict[str, Any] = {}
    for key, value in data.items():
        if key == "eos_token_id":
            ids = value if isinstance(value, list) else [value]
            ids = [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
            if ids:
                out["stop_token_ids"] = set(out.get("stop_token_ids", set())) | set(ids)
                out["eos_token_id"] = ids[0]
        elif key == "stop_token_ids" and isinstance(value, list):
            out["stop_token_ids"] = set(out.get("stop_token_ids", set())) | set(value)
        elif key == "stop_strings" and isinstance(value, list):
            out["stop_strings"] = set(value)
        elif key == "early_stopping":
            if value is True:
                out["stop_criteria"] = StopCriteria.EARLY
            elif value == "never":
                out["stop_criteria"] = StopCriteria.NEVER
            else:
                out["stop_criteria"] = StopCriteria.HEURISTIC
        elif key in FIELDS and value is not None:
            kind = FIELDS[key][0]
            if kind == _FLOAT and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            out[key] = value
    try:
        probe = GenerationConfig()
        probe.update_generation_config(**out)
    except (InvalidParameterError, TypeError) as exc:
        raise ConfigError(f"generation config {path}: {exc}") from None
    return out
