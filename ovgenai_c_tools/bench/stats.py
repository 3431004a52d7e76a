"""Statistics of repeated measurements: medians, percentiles, paired ratios and their geometric mean with a
95 % confidence interval, and the rotation that interleaves engines across repetitions. Pure functions of
numbers (standard library only), shared by the parent and the workers."""
from __future__ import annotations

import math
import statistics
from typing import Any, Dict, List, Optional, Sequence


def median(xs: Sequence[Optional[float]]) -> Optional[float]:
    """Median of the values that are not None (None when there are none)."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def percentile(xs: Sequence[Optional[float]], q: float) -> Optional[float]:
    """The ``q`` quantile (0..1) of the values that are not None, linear between order statistics."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """a / b, or None when either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


# two-sided 95 % Student t quantiles by degrees of freedom (1..30); 1.96 beyond
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
       2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def paired_ratios(a_runs: Sequence[Dict[str, Any]], b_runs: Sequence[Dict[str, Any]], key: str) -> List[float]:
    """Per-repetition ratios a/b of ``key``: run i of each list was made in the same interleaved round, so the
    machine's drift between rounds cancels in the ratio."""
    out = []
    for a, b in zip(a_runs, b_runs):
        x, y = (a or {}).get(key), (b or {}).get(key)
        if x is not None and y is not None and x > 0 and y > 0:
            out.append(x / y)
    return out


def ratio_stats(ratios: Sequence[float]) -> Optional[Dict[str, Any]]:
    """Geometric mean of paired ratios with its 95 % confidence interval (t on the logs) and the quartiles."""
    rs = [r for r in ratios if r and r > 0]
    if not rs:
        return None
    logs = [math.log(r) for r in rs]
    m = statistics.fmean(logs)
    out: Dict[str, Any] = {"n": len(rs), "geomean": math.exp(m), "median": statistics.median(rs),
                           "p25": percentile(rs, 0.25), "p75": percentile(rs, 0.75), "ci95": None}
    if len(rs) > 1:
        half = (T95[len(rs) - 2] if len(rs) - 1 <= len(T95) else 1.96) * statistics.stdev(logs) / math.sqrt(len(rs))
        out["ci95"] = [math.exp(m - half), math.exp(m + half)]
    return out



def rotate(items: List[Any], k: int) -> List[Any]:
    """``items`` rotated left by ``k``: repetition k starts with a different engine, so drift hits all alike."""
    if not items:
        return items
    k %= len(items)
    return items[k:] + items[:k]
