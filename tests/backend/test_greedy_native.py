"""Sampler::greedy (native/src/engine/sampler.cpp) on rows built to catch a vectorised argmax out: the first index of
the largest value wins ties, NaN never wins, all -inf / NaN gives 0, +inf wins, lengths around the block and lane
sizes. Compiled with g++ from the engine's sampler and what it needs (no OpenVINO), checked against Python."""
from __future__ import annotations

import math
import random
import struct
import subprocess
from pathlib import Path

import pytest

from testsupport import native_unit, nlohmann_include

pytestmark = pytest.mark.engine_explicit  # no pipeline: once per run, not again in the SDPA pass

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native" / "src"
SOURCES = [NATIVE / "engine" / "sampler.cpp", NATIVE / "engine" / "generation_config.cpp",
           *sorted((NATIVE / "json").glob("*.cpp")), *sorted((NATIVE / "common").glob("*.cpp")),
           Path(__file__).with_name("greedy_main.cpp")]


def _reference(row):
    best, value = 0, -math.inf
    for i, v in enumerate(row):
        if v > value:  # NaN compares False: never taken
            best, value = i, v
    return best


@pytest.fixture(scope="module")
def greedy_exe():
    inputs = SOURCES + sorted(NATIVE.glob("engine/*.hpp")) + sorted(NATIVE.glob("json/*.hpp"))
    # the JSON sources parse with the nlohmann-json pip package
    return native_unit("greedy", ["-std=c++17", "-O3", "-I", str(NATIVE), "-isystem", str(nlohmann_include()),
                                  *map(str, SOURCES)], inputs)


def _rows():
    rng = random.Random(7)
    rows = []
    for n in (1, 2, 15, 16, 17, 255, 256, 257, 511, 4097, 49152, 49153):
        rows.append([rng.gauss(0, 3) for _ in range(n)])
        tie = [rng.gauss(0, 1) for _ in range(n)]
        for i in rng.sample(range(n), min(3, n)):
            tie[i] = 50.0  # equal maxima: the first must win
        rows.append(tie)
        rows.append([1.0] * n)  # all equal: 0
        last = [0.0] * n
        last[-1] = 1.0
        rows.append(last)
    n = 49152
    with_nan = [rng.gauss(0, 1) for _ in range(n)]
    for i in range(0, n, 97):
        with_nan[i] = math.nan
    with_nan[300] = math.nan
    rows.append(with_nan)
    rows.append([math.nan] * 300)  # nothing is larger than -inf: 0
    rows.append([-math.inf] * 300)
    rows.append([-math.inf] * 299 + [-1e30])
    inf_row = [rng.gauss(0, 1) for _ in range(1000)]
    inf_row[700] = inf_row[900] = math.inf
    rows.append(inf_row)
    nan_then_max = [math.nan] + [0.0] * 600 + [2.0] + [2.0]
    rows.append(nan_then_max)
    rows.append([])  # an empty row: 0
    return rows


def test_greedy_is_the_first_index_of_the_largest_value(greedy_exe, tmp_path):
    rows = _rows()
    data = tmp_path / "rows.bin"
    with open(data, "wb") as f:
        for row in rows:
            f.write(struct.pack("<Q", len(row)))
            f.write(struct.pack(f"<{len(row)}f", *row))
    res = subprocess.run([str(greedy_exe), str(data)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    got = [int(x) for x in res.stdout.split()]
    assert got == [_reference([struct.unpack("<f", struct.pack("<f", v))[0] for v in row]) for row in rows]
