"""cdefs/04_perf_metrics.h: every value of a native ``ov_genai_perf_metrics`` read into a
:class:`~ovgenai_c.PerfMetrics`."""
from __future__ import annotations

import threading
from typing import Any, Dict

from ..results import PAIRS, RAW_FROM_PAIR, MeanStdPair, PerfMetrics, RawPerfMetrics
from . import bundled_perf_metrics
from .checked import CApi


_GETTERS = tuple((name, "ov_genai_perf_metrics_get_" + name) for name in PAIRS)


def read(capi: CApi, handle: Any) -> PerfMetrics:
    """Read a native perf metrics object (the caller frees it). With the bundled raw-series extra (cdefs/92) the
    raw lists are the library's; else each per-call list holds the call's one sample."""
    ffi, lib, check = capi.ffi, capi.lib, capi.check
    f = ffi.new("float*")
    n = ffi.new("size_t*")
    check(lib.ov_genai_perf_metrics_get_load_time(handle, f), "ov_genai_perf_metrics_get_load_time")
    load = float(f[0])
    check(lib.ov_genai_perf_metrics_get_num_generation_tokens(handle, n),
          "ov_genai_perf_metrics_get_num_generation_tokens")
    gen = int(n[0])
    check(lib.ov_genai_perf_metrics_get_num_input_tokens(handle, n), "ov_genai_perf_metrics_get_num_input_tokens")
    inp = int(n[0])
    mean, std = ffi.new("float*"), ffi.new("float*")
    pairs: Dict[str, MeanStdPair] = {}
    for name, getter in _GETTERS:
        check(getattr(lib, getter)(handle, mean, std), getter)
        pairs[name] = MeanStdPair(float(mean[0]), float(std[0]))
    samples = {name: 1 for name in PAIRS}
    samples["tpot"] = max(gen - 1, 1)
    samples["ipot"] = max(gen, 1)
    if capi.has(bundled_perf_metrics.GET_RAW):
        raw = bundled_perf_metrics.read_raw(capi, handle)
    else:
        raw = RawPerfMetrics(**{k: [pairs[name].mean * 1000.0] for k, name in RAW_FROM_PAIR.items()})
    return PerfMetrics(load_time=load, num_generation_tokens=gen, num_input_tokens=inp, pairs=pairs, samples=samples,
                       raw_metrics=raw)


def deferred(capi: CApi, handle: Any, free: Any) -> PerfMetrics:
    """A :meth:`PerfMetrics.deferred` over a native perf metrics object that this takes over: the generated-token
    count is read now (the finish reason needs it), everything else on first use, after which the native object is
    freed; it is freed as well when the PerfMetrics is dropped unread. The object is a copy owned by nothing else
    (``ov_genai_*decoded_results_get_perf_metrics``), so reading or freeing it (``free``) on any thread is safe."""
    ffi, lib = capi.ffi, capi.lib
    owned = ffi.gc(handle, free)
    n = ffi.new("size_t*")
    try:
        capi.check(lib.ov_genai_perf_metrics_get_num_generation_tokens(owned, n),
                   "ov_genai_perf_metrics_get_num_generation_tokens")
    except BaseException:
        ffi.release(owned)
        raise
    lock = threading.Lock()
    box: Dict[str, Any] = {"handle": owned}
    done: Dict[str, Any] = {}

    def load() -> PerfMetrics:
        with lock:
            if not done:
                h = box.pop("handle")
                try:
                    done["perf"] = read(capi, h)
                except BaseException as exc:  # every later use raises it again
                    done["error"] = exc
                finally:
                    ffi.release(h)
            if "error" in done:
                raise done["error"]
            return done["perf"]

    load.native_kind = "perf_metrics"  # type: ignore[attr-defined]  # (its live-handle kind, for the accounting)
    return PerfMetrics.deferred(load, num_generation_tokens=int(n[0]))
