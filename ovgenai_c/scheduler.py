"""``SchedulerConfig``: openvino_genai's scheduler settings, and their translation into C-API create properties.

Passing ``scheduler_config=`` to ``LLMPipeline`` selects GenAI's PagedAttention (continuous-batching) path, as
in openvino_genai. The GenAI C API has no scheduler-config type: GenAI casts a ``scheduler_config`` property to
its C++ struct, which a string cannot become. So :func:`scheduler_properties` sends what each library kind can
take:

- every kind: ``ATTENTION_BACKEND=PA``;
- ``bundled``: ``OVGENAI_C_*`` keys that the bundled PagedAttention engine honours (see native/README.md);
- ``official`` / ``other``: nothing else. Selected by ``ATTENTION_BACKEND=PA`` alone, the official library runs
  GenAI's latency-oriented scheduler config (``max_num_batched_tokens`` unlimited, ``enable_prefix_caching``
  True, the rest at their defaults), so a field is refused unless it has that value.

A field that the loaded library cannot honour raises :class:`~ovgenai_c.errors.NotSupportedError` naming the
field and the library kind, never a silent difference.
"""
from __future__ import annotations

import operator
import sys
from typing import Any, Dict, List, Optional, Tuple

from . import errors

SIZE_MAX = 2**64 - 1

# field -> default, in upstream's declaration order (ov::genai::SchedulerConfig, 2026.4)
_SIZE_FIELDS = ("max_num_batched_tokens", "num_kv_blocks", "cache_size", "num_linear_attention_blocks",
                "max_num_seqs")
_BOOL_FIELDS = ("dynamic_split_fuse", "use_cache_eviction", "enable_prefix_caching", "use_sparse_attention")
_DEFAULTS: Dict[str, Any] = {
    "max_num_batched_tokens": 256,
    "num_kv_blocks": 0,
    "cache_size": 0,
    "num_linear_attention_blocks": 0,
    "cache_interval_multiplier": None,
    "dynamic_split_fuse": True,
    "use_cache_eviction": False,
    "cache_eviction_config": None,
    "max_num_seqs": 256,
    "enable_prefix_caching": False,
    "use_sparse_attention": False,
    "sparse_attention_config": None,
}
FIELDS: Tuple[str, ...] = tuple(_DEFAULTS)


def _size(name: str, value: Any) -> int:
    """An unsigned 64-bit integer, as pybind's size_t caster takes it (int, numpy int, bool; no float/str)."""
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"SchedulerConfig.{name} must be a non-negative int, not {type(value).__name__}") from None
    if not 0 <= v <= SIZE_MAX:
        raise TypeError(f"SchedulerConfig.{name} must be in [0, 2**64-1], got {v}")
    return v


def _flag(name: str, value: Any) -> bool:
    """A bool as pybind's caster takes it: bool, numpy bool, None (False) or any number; not str/list."""
    if value is None:
        return False
    if isinstance(value, (str, bytes)) or not hasattr(type(value), "__bool__"):
        raise TypeError(f"SchedulerConfig.{name} must be a bool, not {type(value).__name__}")
    return bool(value)


class SchedulerConfig:
    """openvino_genai.SchedulerConfig: the same fields, defaults and value checks (TypeError as pybind).

    ``cache_eviction_config`` and ``sparse_attention_config`` are None for upstream's default object (ovgenai_c
    has no CacheEvictionConfig / SparseAttentionConfig types); any other value counts as set. Unlike pybind's
    class (identity comparison), ``==`` compares the fields as the C++ ``operator==`` does, plus the two
    sub-configs. Keyword arguments to the constructor set fields (an extension; pybind takes none).
    """

    __slots__ = tuple("_" + f for f in FIELDS)

    def __init__(self, **fields: Any) -> None:
        for name, value in _DEFAULTS.items():
            object.__setattr__(self, "_" + name, value)
        for name, value in fields.items():
            if name not in _DEFAULTS:
                raise TypeError(f"SchedulerConfig has no field {name!r} (fields: {', '.join(FIELDS)})")
            setattr(self, name, value)

    def __dir__(self) -> List[str]:
        """The fields, not the slots that hold them."""
        return sorted((set(super().__dir__()) - set(self.__slots__)) | set(FIELDS))

    def __getattr__(self, name: str) -> Any:
        if name in _DEFAULTS:
            return object.__getattribute__(self, "_" + name)
        raise AttributeError(f"'SchedulerConfig' object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SIZE_FIELDS:
            value = _size(name, value)
        elif name in _BOOL_FIELDS:
            value = _flag(name, value)
        elif name == "cache_interval_multiplier":
            value = None if value is None else _size(name, value)
        elif name not in ("cache_eviction_config", "sparse_attention_config"):
            raise AttributeError(f"'SchedulerConfig' object has no attribute {name!r}")
        object.__setattr__(self, "_" + name, value)

    def as_dict(self) -> Dict[str, Any]:
        return {f: getattr(self, f) for f in FIELDS}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SchedulerConfig):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __copy__(self) -> "SchedulerConfig":
        return SchedulerConfig(**self.as_dict())

    def __deepcopy__(self, memo: Dict[int, Any]) -> "SchedulerConfig":
        import copy

        return SchedulerConfig(**{k: copy.deepcopy(v, memo) for k, v in self.as_dict().items()})

    def copy(self) -> "SchedulerConfig":
        return self.__copy__()

    def __repr__(self) -> str:
        changed = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items() if v != _DEFAULTS[k])
        return f"SchedulerConfig({changed})"

    def to_string(self) -> str:
        """The multi-line text of upstream's SchedulerConfig::to_string()."""
        def b(v: bool) -> str:
            return "true" if v else "false"

        cim = "unset" if self.cache_interval_multiplier is None else str(self.cache_interval_multiplier)
        lines = ["SchedulerConfig { ",
                 f"  max_num_batched_tokens: {self.max_num_batched_tokens}",
                 f"  num_kv_blocks: {self.num_kv_blocks}",
                 f"  cache_size: {self.cache_size}",
                 f"  num_linear_attention_blocks: {self.num_linear_attention_blocks}",
                 f"  cache_interval_multiplier: {cim}",
                 f"  dynamic_split_fuse: {b(self.dynamic_split_fuse)}",
                 f"  use_cache_eviction: {b(self.use_cache_eviction)}"]
        if self.use_cache_eviction and self.cache_eviction_config is not None:
            lines.append(str(self.cache_eviction_config.to_string() if hasattr(self.cache_eviction_config, "to_string")
                             else self.cache_eviction_config))
        lines += [f"  max_num_seqs: {self.max_num_seqs}",
                  f"  enable_prefix_caching: {b(self.enable_prefix_caching)}",
                  f"  use_sparse_attention: {b(self.use_sparse_attention)}"]
        if self.use_sparse_attention and self.sparse_attention_config is not None:
            sac = self.sparse_attention_config
            lines.append(str(sac.to_string() if hasattr(sac, "to_string") else sac))
        lines.append(" }")
        return "\n".join(lines)

    def validate(self) -> None:
        """Upstream's SchedulerConfig::validate(); a RuntimeError (GeneralError) as GenAI's."""
        if self.enable_prefix_caching and self.cache_interval_multiplier == 0:
            raise errors.GeneralError(
                "SchedulerConfig cache_interval_multiplier must be greater than 0 when prefix caching is enabled")


# The bundled engine's create properties, one per honoured field (see native/README.md).
BUNDLED_KEYS: Dict[str, str] = {
    "max_num_batched_tokens": "OVGENAI_C_MAX_NUM_BATCHED_TOKENS",
    "num_kv_blocks": "OVGENAI_C_NUM_KV_BLOCKS",
    "cache_size": "OVGENAI_C_CACHE_SIZE",
    "dynamic_split_fuse": "OVGENAI_C_DYNAMIC_SPLIT_FUSE",
    "max_num_seqs": "OVGENAI_C_MAX_NUM_SEQS",
    "enable_prefix_caching": "OVGENAI_C_ENABLE_PREFIX_CACHING",
}
# Fields the bundled engine accepts without a key: GenAI ignores them for models without linear-attention
# layers, and the bundled engine loads no such model.
_BUNDLED_NO_OP = ("num_linear_attention_blocks", "cache_interval_multiplier")

# What the official library runs when PagedAttention is selected by ATTENTION_BACKEND=PA alone
# (utils::get_latency_oriented_scheduler_config()): the only config it can honour.
_LATENCY_ORIENTED = dict(_DEFAULTS, max_num_batched_tokens=SIZE_MAX, enable_prefix_caching=True)


def _unlimited(v: int) -> bool:
    return v >= sys.maxsize  # sys.maxsize (upstream samples) and SIZE_MAX both mean "never chunk"


def scheduler_properties(cfg: Optional[SchedulerConfig], library_kind: str) -> List[Tuple[str, str]]:
    """C-API create properties for ``scheduler_config=cfg`` on a library of kind ``library_kind``.

    Always ``("ATTENTION_BACKEND", "PA")``. On ``"bundled"``, one ``OVGENAI_C_*`` key per honoured field;
    ``use_cache_eviction``, ``use_sparse_attention`` and their sub-configs are refused. On ``"official"`` (and
    ``"other"``) nothing else can be sent, because GenAI only takes a SchedulerConfig object for that property:
    the library then runs its latency-oriented config, and any field that differs from it (including
    ``SchedulerConfig()``'s ``max_num_batched_tokens=256`` and ``enable_prefix_caching=False``) raises
    NotSupportedError naming the field and the library kind. ``cfg=None`` gives no properties.
    """
    if cfg is None:
        return []
    if not isinstance(cfg, SchedulerConfig):
        if type(cfg).__name__ == "SchedulerConfig":  # e.g. openvino_genai's: copy its fields
            src = cfg
            cfg = SchedulerConfig()
            for name in FIELDS:
                if name not in ("cache_eviction_config", "sparse_attention_config") and hasattr(src, name):
                    setattr(cfg, name, getattr(src, name))
        else:
            raise TypeError(f"scheduler_config must be a SchedulerConfig, not {type(cfg).__name__}")
    cfg.validate()
    props = [("ATTENTION_BACKEND", "PA")]
    values = cfg.as_dict()
    if library_kind == "bundled":
        for name, value in values.items():
            if name in BUNDLED_KEYS or name in _BUNDLED_NO_OP or value == _DEFAULTS[name]:
                continue
            raise errors.NotSupportedError(
                f"SchedulerConfig.{name}={value!r} is not supported by the bundled backend "
                f"(it honours {', '.join(BUNDLED_KEYS)})")
        for name, key in BUNDLED_KEYS.items():
            value = values[name]
            props.append((key, ("YES" if value else "NO") if isinstance(value, bool) else str(value)))
        return props
    for name, value in values.items():
        wanted = _LATENCY_ORIENTED[name]
        same = _unlimited(value) if name == "max_num_batched_tokens" else value == wanted
        if not same:
            raise errors.NotSupportedError(
                f"SchedulerConfig.{name}={value!r} is not supported by the {library_kind} library: its C API "
                f"cannot take a SchedulerConfig, so scheduler_config only selects PagedAttention, which runs "
                f"GenAI's latency-oriented config ({name}={'unlimited' if name == 'max_num_batched_tokens' else repr(wanted)})")
    return props
