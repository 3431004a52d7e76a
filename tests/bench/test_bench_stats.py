"""The benchmark's statistics (ovgenai_c_tools/bench/stats.py) against values computed independently: by hand,
with numpy's percentiles and with scipy's Student t and normal quantiles."""
from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from ovgenai_c_tools.bench.stats import T95, median, paired_ratios, percentile, ratio, ratio_stats, rotate  # noqa: E402


def _lognormal_ratios(n: int, seed: int) -> list:
    rng = random.Random(seed)
    return [math.exp(rng.gauss(0.02, 0.05)) for _ in range(n)]


def test_median_ignores_missing_values():
    assert median([3.0, None, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0]) == 2.5
    assert median([None, None]) is None and median([]) is None


def test_percentile_is_numpys_linear_interpolation():
    np = pytest.importorskip("numpy")
    xs = [42.0] + _lognormal_ratios(17, 3)
    for q in (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0):
        assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q * 100)), rel=1e-12)
    assert percentile([5.0], 0.95) == 5.0
    assert percentile([None, 2.0, None, 4.0], 0.5) == 3.0


def test_ratio_of_missing_or_zero_is_none():
    assert ratio(1.0, 4.0) == 0.25
    assert ratio(0.0, 4.0) == 0.0
    assert ratio(1.0, None) is None and ratio(None, None) is None and ratio(2.0, 0.0) is None


def test_paired_ratios_keep_rounds_aligned_and_skip_unusable_ones():
    a = [{"t": 6.0}, {"t": 0.0}, None, {"t": 5.0}, {"t": 1.0}, {"t": 9.0}]
    b = [{"t": 3.0}, {"t": 1.0}, {"t": 2.0}, {}, {"t": -1.0}]
    # round 2 has a zero, round 3 a failed run (None), round 4 a missing key, round 5 a negative; round 6 has no pair
    assert paired_ratios(a, b, "t") == [2.0]
    assert paired_ratios(a, b, "other") == []


def test_ratio_stats_by_hand_for_two_rounds():
    st = ratio_stats([2.0, 0.5])
    # logs: +ln2, -ln2 -> mean 0, sample sd ln2*sqrt(2); half width t(1) * sd / sqrt(2) = 12.706 * ln2
    assert st["n"] == 2 and st["geomean"] == pytest.approx(1.0)
    assert st["median"] == 1.25 and st["p25"] == pytest.approx(0.875) and st["p75"] == pytest.approx(1.625)
    assert st["ci95"] == pytest.approx([2.0 ** -12.706, 2.0 ** 12.706], rel=1e-9)


def test_ratio_stats_by_hand_for_four_rounds():
    st = ratio_stats([1.0, 1.0, 4.0, 4.0])
    # logs 0, 0, 2ln2, 2ln2: mean ln2 (geomean 2); every deviation is ln2, so sd = sqrt(4 ln2^2 / 3) = 2 ln2 / sqrt3
    # and the half width t(3) * sd / sqrt(4) = 3.182 ln2 / sqrt3
    assert st["geomean"] == pytest.approx(2.0) and st["median"] == 2.5
    k = 3.182 / math.sqrt(3.0)
    assert st["ci95"] == pytest.approx([2.0 * 2.0 ** -k, 2.0 * 2.0 ** k], rel=1e-9)


def test_ratio_stats_leaves_out_non_positive_values():
    assert ratio_stats([0.0, -1.0, None, 3.0]) == {"n": 1, "geomean": pytest.approx(3.0), "median": 3.0,
                                                   "p25": 3.0, "p75": 3.0, "ci95": None}
    assert ratio_stats([0.0, None]) is None


def test_t_table_matches_scipy():
    t = pytest.importorskip("scipy.stats").t
    assert len(T95) == 30
    for df, value in enumerate(T95, start=1):
        assert value == pytest.approx(round(float(t.ppf(0.975, df)), 3), abs=1e-9), df


@pytest.mark.parametrize("n", [2, 3, 5, 12, 31])
def test_interval_is_the_t_interval_on_the_logs(n):
    sstats = pytest.importorskip("scipy.stats")
    np = pytest.importorskip("numpy")
    rs = _lognormal_ratios(n, seed=n)
    logs = np.log(rs)
    centre = float(np.mean(logs))
    half = float(sstats.t.ppf(0.975, n - 1)) * float(np.std(logs, ddof=1)) / math.sqrt(n)
    st = ratio_stats(rs)
    assert st["n"] == n
    assert st["geomean"] == pytest.approx(float(sstats.gmean(rs)), rel=1e-12)
    assert st["median"] == pytest.approx(float(np.median(rs)), rel=1e-12)
    lo, hi = st["ci95"]
    assert math.log(lo * hi) / 2 == pytest.approx(centre, abs=1e-12)  # symmetric on the log scale
    # the table holds t rounded to 3 decimals: the half width agrees to that precision
    assert math.log(hi / lo) / 2 == pytest.approx(half, rel=3e-4)


def test_interval_beyond_the_table_uses_the_normal_quantile():
    sstats = pytest.importorskip("scipy.stats")
    np = pytest.importorskip("numpy")
    rs = _lognormal_ratios(40, seed=40)
    logs = np.log(rs)
    half = float(sstats.norm.ppf(0.975)) * float(np.std(logs, ddof=1)) / math.sqrt(40)
    lo, hi = ratio_stats(rs)["ci95"]
    assert math.log(hi / lo) / 2 == pytest.approx(half, rel=3e-4)


def test_rotate_starts_each_repetition_with_the_next_item():
    items = ["a", "b", "c"]
    assert [rotate(items, k) for k in range(4)] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"],
                                                    ["a", "b", "c"]]
    assert rotate([], 5) == []
