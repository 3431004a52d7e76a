"""cdefs/92_ovgenai_c_perf_metrics.h (bundled backend only): the raw series behind a perf metrics object."""
from __future__ import annotations

from typing import Any

from ..results import COUNT_SERIES, RAW_SERIES, RawPerfMetrics
from .checked import CApi

GET_RAW = "ovgenai_c_bundled_perf_metrics_get_raw"


def read_raw(capi: CApi, handle: Any) -> RawPerfMetrics:
    """Every raw series, through the two-call convention (size, then values)."""
    ffi = capi.ffi
    raw = RawPerfMetrics()
    size = ffi.new("size_t*")
    for name in RAW_SERIES:
        key = name.encode()
        capi.call(GET_RAW, handle, key, ffi.NULL, size)
        values = ffi.new("double[]", max(size[0], 1))
        capi.call(GET_RAW, handle, key, values, size)
        series = [values[i] for i in range(size[0])]
        setattr(raw, name, [int(v) for v in series] if name in COUNT_SERIES else series)
    return raw
