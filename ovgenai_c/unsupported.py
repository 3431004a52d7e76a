"""openvino_genai's classes for what the GenAI C API cannot carry (LoRA adapters, structured output, cache eviction,
sparse attention). They exist under pybind's names so ported code imports (``from openvino_genai import
StructuredOutputConfig``) and fails where it first uses one, with :class:`~ovgenai_c.NotSupportedError` saying why,
instead of an ImportError or AttributeError that reads like a packaging fault."""
from __future__ import annotations

import enum
from typing import Any

from .errors import NotSupportedError

ADAPTERS = ("LoRA adapters cannot pass through the GenAI C API (llm_pipeline.h has no adapter functions and "
            "create takes string properties only)")
STRUCTURED_OUTPUT = ("structured output (JSON schema, regex, grammar, structural tags) is not in the GenAI C API: "
                     "generation_config.h has no setter for it")
SCHEDULER_EXTRAS = ("the GenAI C API takes no SchedulerConfig, and the bundled backend's PagedAttention engine "
                    "implements neither cache eviction nor sparse attention")


class _Refused:
    """Constructing one raises NotSupportedError with the class's reason."""

    reason = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotSupportedError(f"{type(self).__name__}: {self.reason}")


# openvino_genai's classes, each with why the C API cannot carry it (declared so type checkers see them too)
class Adapter(_Refused): reason = ADAPTERS  # noqa: E701
class AdapterConfig(_Refused): reason = ADAPTERS  # noqa: E701
class StructuredOutputConfig(_Refused): reason = STRUCTURED_OUTPUT  # noqa: E701
class StructuralTagsConfig(_Refused): reason = STRUCTURED_OUTPUT  # noqa: E701
class StructuralTagItem(_Refused): reason = STRUCTURED_OUTPUT  # noqa: E701
class CacheEvictionConfig(_Refused): reason = SCHEDULER_EXTRAS  # noqa: E701
class SparseAttentionConfig(_Refused): reason = SCHEDULER_EXTRAS  # noqa: E701
class KVCrushConfig(_Refused): reason = SCHEDULER_EXTRAS  # noqa: E701


# the enums those configs take, with upstream's values (plain values: only the configs refuse)
class AggregationMode(enum.IntEnum):
    """How token importance scores add up for cache eviction (openvino_genai.AggregationMode)."""
    SUM = 0
    NORM_SUM = 1
    ADAPTIVE_RKV = 2


class KVCrushAnchorPointMode(enum.IntEnum):
    """KVCrush eviction's anchor point (openvino_genai.KVCrushAnchorPointMode)."""
    RANDOM = 0
    ZEROS = 1
    ONES = 2
    MEAN = 3
    ALTERNATING = 4


class SparseAttentionMode(enum.IntEnum):
    """Which sparse attention a SparseAttentionConfig asks for (openvino_genai.SparseAttentionMode)."""
    TRISHAPE = 0
    XATTENTION = 1


REFUSED = tuple(cls.__name__ for cls in _Refused.__subclasses__())
ENUMS = ("AggregationMode", "KVCrushAnchorPointMode", "SparseAttentionMode")

__all__ = list(REFUSED) + list(ENUMS)
