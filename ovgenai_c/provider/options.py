"""Ollama-style generation options → GenerationConfig fields.

=================  =====================  ==========================================================
option             GenerationConfig       notes
=================  =====================  ==========================================================
num_predict        max_new_tokens         unset / -1 / -2 (Ollama's "no limit" / "fill context") → the cap
temperature        temperature, do_sample 0 → greedy; > 0 → multinomial sampling
top_k              top_k, do_sample       0 → no top-k filter
top_p              top_p, do_sample       in (0, 1]
min_p              min_p, do_sample       in [0, 1)
seed               rng_seed               integer >= 0
stop               stop_strings           a str or a list of str
repeat_penalty     repetition_penalty     > 0
presence_penalty   presence_penalty       in [-2, 2]
frequency_penalty  frequency_penalty      in [-2, 2]
=================  =====================  ==========================================================

The values are checked by GenerationConfig's own rules (:func:`ovgenai_c.config.check_value` for the type and
the C type's range, :data:`ovgenai_c.config.RANGE_RULES` for upstream validate()'s ranges), with messages that
name the option; only Ollama's own meanings (num_predict -1 / -2, temperature 0, top_k 0) and its JSON leniency
(an integral float such as ``40.0`` for an integer option) are decided here.

``top_k`` / ``top_p`` / ``min_p`` without a ``temperature`` turn sampling on (as in Ollama, where sampling is
the default); ``temperature: 0`` always means greedy. The number of new tokens is clamped to the profile's
``max_output_tokens``.

Generation always ends: without ``num_predict`` (or with -1 / -2) the answer is capped at the profile's
``max_output_tokens``, else at the model's context window (the profile's ``context_length``, the IR folder's
``config.json`` ``max_position_embeddings``, the GGUF's ``<arch>.context_length``), else at
:data:`FALLBACK_MAX_NEW_TOKENS` when the context window is unknown. (The prompt's own tokens are not
subtracted: the bundled backend stops at the context window itself when it knows it.)
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from .. import config
from ..errors import InvalidParameterError
from .errors import OptionError, closest

FALLBACK_MAX_NEW_TOKENS = 4096  # the cap when neither the profile nor the model files give a context window

# option -> the GenerationConfig field it sets (whose rules check it)
OPTION_FIELDS: Dict[str, str] = {
    "num_predict": "max_new_tokens", "temperature": "temperature", "top_k": "top_k", "top_p": "top_p",
    "min_p": "min_p", "seed": "rng_seed", "stop": "stop_strings", "repeat_penalty": "repetition_penalty",
    "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
}
OPTIONS = tuple(OPTION_FIELDS)

# Ollama option names that exist there but have no GenAI C API counterpart: refused with that reason.
UNSUPPORTED = {
    "num_ctx": "the context size is fixed by the model (set context_length in the model profile)",
    "num_keep": "no prompt-cache control in the GenAI C API",
    "typical_p": "GenAI has no typical sampling",
    "tfs_z": "GenAI has no tail-free sampling",
    "repeat_last_n": "GenAI's repetition penalty covers the whole sequence",
    "penalize_newline": "not available in GenAI",
    "mirostat": "GenAI has no mirostat sampling",
    "mirostat_tau": "GenAI has no mirostat sampling",
    "mirostat_eta": "GenAI has no mirostat sampling",
    "num_batch": "a load-time setting, not a generation option",
    "num_gpu": "choose a device instead (--device / OVGENAI_DEVICE / profile)",
    "main_gpu": "choose a device instead (--device / OVGENAI_DEVICE / profile)",
    "num_thread": "pass an OpenVINO property (INFERENCE_NUM_THREADS) in the profile instead",
    "numa": "not available in GenAI",
    "use_mmap": "not available in GenAI",
    "use_mlock": "not available in GenAI",
    "low_vram": "not available in GenAI",
}


def _integer(subject: str, name: str, value: Any) -> Any:
    """Ollama's JSON leniency: an integral float stands for the integer (the config's check does the rest)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"{subject} must be an integer, got {type(value).__name__} {value!r}", name)
    return value


def _checked(subject: str, name: str, value: Any, note: str = "") -> Any:
    """``value`` through the config field's own check; the error names the option (``note`` appended)."""
    try:
        return config.check_value(OPTION_FIELDS[name], value, subject)
    except InvalidParameterError as exc:
        raise OptionError(f"{exc}{note}", name) from None


def _check_value(name: str, value: Any, where: str) -> Any:
    """One option's value, checked by the rules of the field it sets; returns the clean value."""
    subject = f"{where}option {name!r}"
    field = OPTION_FIELDS[name]
    kind = config.field_kind(field)
    if name == "num_predict":
        n = _integer(subject, name, value)
        if n in (-1, -2):  # Ollama's "no limit" / "fill the context": the cap decides
            return n
        if n < 1:
            raise OptionError(f"{subject} must be >= 1 (or -1 for no limit), got {n}", name)
        return _checked(subject, name, n)
    if name == "stop":
        stops = [value] if isinstance(value, str) else value
        if not isinstance(stops, (list, tuple)) or not all(isinstance(s, str) for s in stops):
            raise OptionError(f"{subject} must be a str or a list of str, got {value!r}", name)
        _checked(subject, name, stops)
        return list(stops)
    if kind == "size":  # top_k (0 = no filter, Ollama's meaning), seed
        n = _integer(subject, name, value)
        return _checked(subject, name, n, " (0 = off)" if name == "top_k" and n < 0 else "")
    stored = _checked(subject, name, value)  # a float: finite, fits a C float
    rule = config.RANGE_RULES.get(field)
    if rule is not None:
        interval = rule.interval.including_lo() if name == "temperature" else rule.interval  # 0 = greedy
        if stored not in interval:  # checked as C will store it (float32), reported as given
            raise OptionError(f"{subject} must be {interval}, got {float(value)}", name)
    return float(value)


def check_options(options: Mapping[str, Any], where: str = "") -> Dict[str, Any]:
    """Validate names and values; return a clean dict (``stop`` as a list). ``where`` prefixes messages."""
    if not isinstance(options, Mapping):
        raise OptionError(f"{where}options must be a mapping of option names to values, not {type(options).__name__}")
    out: Dict[str, Any] = {}
    for name, value in options.items():
        if not isinstance(name, str):
            raise OptionError(f"{where}option names must be str, got {name!r}")
        if name in UNSUPPORTED:
            raise OptionError(f"{where}option {name!r} is not supported: {UNSUPPORTED[name]}", name)
        if name not in OPTIONS:
            raise OptionError(f"{where}unknown option {name!r}{closest(name, OPTIONS)}; known options: "
                              f"{', '.join(OPTIONS)}", name)
        if value is None:
            continue
        out[name] = _check_value(name, value, where)
    return out


def default_max_new_tokens(max_output_tokens: Optional[int] = None, context_length: Optional[int] = None) -> int:
    """The cap on new tokens when ``num_predict`` is not given: max output, else the context window, else
    :data:`FALLBACK_MAX_NEW_TOKENS`."""
    if max_output_tokens is not None:
        return max_output_tokens
    if context_length is not None:
        return context_length
    return FALLBACK_MAX_NEW_TOKENS


def to_generation_kwargs(options: Mapping[str, Any], max_output_tokens: Optional[int] = None,
                         context_length: Optional[int] = None) -> Dict[str, Any]:
    """GenerationConfig keyword arguments for ``options``. ``max_new_tokens`` is always set: ``num_predict``
    clamped to ``max_output_tokens``, or (unset, -1, -2) :func:`default_max_new_tokens`."""
    opts = check_options(options)
    kw: Dict[str, Any] = {}
    n = opts.get("num_predict")
    if n is None or n < 0:
        kw["max_new_tokens"] = default_max_new_tokens(max_output_tokens, context_length)
    else:
        kw["max_new_tokens"] = min(n, max_output_tokens) if max_output_tokens is not None else n
    sampling_knobs = [k for k in ("top_k", "top_p", "min_p") if k in opts]
    if "temperature" in opts:
        t = opts["temperature"]
        if t == 0:
            kw["do_sample"] = False
        else:
            kw["do_sample"] = True
            kw["temperature"] = t
    elif sampling_knobs:
        kw["do_sample"] = True
    if opts.get("top_k"):  # 0 = no filter: the config's default
        kw["top_k"] = opts["top_k"]
    if "stop" in opts:
        kw["stop_strings"] = set(opts["stop"])
    for name in ("top_p", "min_p", "seed", "repeat_penalty", "presence_penalty", "frequency_penalty"):
        if name in opts:  # the same value under the field's name
            kw[OPTION_FIELDS[name]] = opts[name]
    return kw
