"""Ollama-style generation options → GenerationConfig fields.

=================  =====================  ==========================================================
option             GenerationConfig       notes
=================  =====================  ==========================================================
num_predict        max_new_tokens         unset / -1 / -2 (Ollama's "no limit" / "fill context") → the cap
temperature        temperature, do_sample 0 → greedy; > 0 → multinomial sampling
top_k              top_k, do_sample       0 → no top-k filter
top_p              top_p, do_sample       in (0, 1]
min_p              min_p, do_sample       in [0, 1]
seed               rng_seed               integer >= 0
stop               stop_strings           a str or a list of str
repeat_penalty     repetition_penalty     > 0
presence_penalty   presence_penalty
frequency_penalty  frequency_penalty
=================  =====================  ==========================================================

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

import math
from typing import Any, Dict, Mapping, Optional

from .errors import OptionError, closest

FALLBACK_MAX_NEW_TOKENS = 4096  # the cap when neither the profile nor the model files give a context window

OPTIONS = ("num_predict", "temperature", "top_k", "top_p", "min_p", "seed", "stop", "repeat_penalty",
           "presence_penalty", "frequency_penalty")

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


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OptionError(f"option {name!r} must be a number, got {type(value).__name__} {value!r}", name)
    value = float(value)
    if not math.isfinite(value):
        raise OptionError(f"option {name!r} must be a finite number, got {value}", name)
    return value


def _integer(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise OptionError(f"option {name!r} must be an integer, got {type(value).__name__} {value!r}", name)
    return int(value)


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
        if name == "num_predict":
            n = _integer(name, value)
            if n < -2 or n == 0:
                raise OptionError(f"{where}option 'num_predict' must be >= 1 (or -1 for no limit), got {n}", name)
            out[name] = n
        elif name == "temperature":
            t = _number(name, value)
            if t < 0:
                raise OptionError(f"{where}option 'temperature' must be >= 0, got {t}", name)
            out[name] = t
        elif name == "top_k":
            k = _integer(name, value)
            if k < 0:
                raise OptionError(f"{where}option 'top_k' must be >= 0 (0 = off), got {k}", name)
            out[name] = k
        elif name == "top_p":
            p = _number(name, value)
            if not 0 < p <= 1:
                raise OptionError(f"{where}option 'top_p' must be in (0, 1], got {p}", name)
            out[name] = p
        elif name == "min_p":
            p = _number(name, value)
            if not 0 <= p <= 1:
                raise OptionError(f"{where}option 'min_p' must be in [0, 1], got {p}", name)
            out[name] = p
        elif name == "seed":
            s = _integer(name, value)
            if s < 0:
                raise OptionError(f"{where}option 'seed' must be >= 0, got {s}", name)
            out[name] = s
        elif name == "stop":
            stops = [value] if isinstance(value, str) else value
            if not isinstance(stops, (list, tuple)) or not all(isinstance(s, str) for s in stops):
                raise OptionError(f"{where}option 'stop' must be a str or a list of str, got {value!r}", name)
            if any(s == "" for s in stops):
                raise OptionError(f"{where}option 'stop' must not contain an empty string", name)
            out[name] = list(stops)
        elif name == "repeat_penalty":
            r = _number(name, value)
            if r <= 0:
                raise OptionError(f"{where}option 'repeat_penalty' must be > 0, got {r}", name)
            out[name] = r
        else:  # presence_penalty, frequency_penalty
            out[name] = _number(name, value)
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
    if opts.get("top_k"):
        kw["top_k"] = opts["top_k"]
    if "top_p" in opts:
        kw["top_p"] = opts["top_p"]
    if "min_p" in opts:
        kw["min_p"] = opts["min_p"]
    if "seed" in opts:
        kw["rng_seed"] = opts["seed"]
    if "stop" in opts:
        kw["stop_strings"] = set(opts["stop"])
    if "repeat_penalty" in opts:
        kw["repetition_penalty"] = opts["repeat_penalty"]
    if "presence_penalty" in opts:
        kw["presence_penalty"] = opts["presence_penalty"]
    if "frequency_penalty" in opts:
        kw["frequency_penalty"] = opts["frequency_penalty"]
    return kw
