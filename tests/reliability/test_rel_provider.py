"""Provider-level concurrency on the double: 8 threads x 50 requests on one Provider, pool eviction churning
under load, two models competing for one resident slot. No errors, no concurrent native calls on a pipeline,
every pipeline freed when the pool closes."""
from __future__ import annotations

import random
import time

import pytest

from relsupport import STATS, make_model_dir, run_threads

provider_mod = pytest.importorskip("ovgenai_c.provider")


def _request(prov, i, j, rng):
    kind = rng.randrange(3)
    prompt = f"p{i} r{j}"
    if kind == 0:
        assert prov.prompt(prompt, num_predict=10) == f"Echo: {prompt}"
    elif kind == 1:
        with prov.stream(prompt, num_predict=10) as s:
            assert "".join(s) == f"Echo: {prompt}"
    else:
        with prov.stream(prompt + " a b c d e f", num_predict=50) as s:
            next(s)  # closed early: native cancel
    STATS.case("concurrency")


def test_provider_8_threads_x_50_requests(dbl, tmp_path):
    model = make_model_dir(tmp_path / "m")
    pool = provider_mod.SessionPool(ttl=None, max_resident=2)
    prov = provider_mod.Provider(model, library=dbl.library, pool=pool)

    def worker(i):
        rng = random.Random(i)
        for j in range(50):
            _request(prov, i, j, rng)

    failures = run_threads(worker, 8, timeout=90.0)
    assert not failures, failures[:3]
    assert pool.stats["created"] == 1
    assert dbl.ctl.ovd_concurrent_violations() == 0
    assert pool.close()
    assert dbl.live("pipeline") == 0


def test_provider_pool_churn_with_ttl_zero(dbl, tmp_path):
    """ttl=0: every release may evict (close) the pipeline while other threads lease it again."""
    model = make_model_dir(tmp_path / "m")
    pool = provider_mod.SessionPool(ttl=0.0, max_resident=1)
    prov = provider_mod.Provider(model, library=dbl.library, pool=pool)

    def worker(i):
        rng = random.Random(100 + i)
        for j in range(25):
            _request(prov, i, j, rng)

    failures = run_threads(worker, 8, timeout=90.0)
    assert not failures, failures[:3]
    assert pool.stats["created"] >= 1
    assert dbl.ctl.ovd_concurrent_violations() == 0
    assert pool.close()
    deadline = time.monotonic() + 5
    while dbl.live("pipeline") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert dbl.live("pipeline") == 0


def test_two_models_competing_for_one_resident_slot(dbl, tmp_path):
    models = [make_model_dir(tmp_path / f"m{k}") for k in range(2)]
    pool = provider_mod.SessionPool(ttl=None, max_resident=1)
    provs = [provider_mod.Provider(m, library=dbl.library, pool=pool) for m in models]

    def worker(i):
        rng = random.Random(200 + i)
        for j in range(25):
            _request(provs[(i + j) % 2], i, j, rng)

    failures = run_threads(worker, 8, timeout=90.0)
    assert not failures, failures[:3]
    assert dbl.ctl.ovd_concurrent_violations() == 0
    assert pool.close()
    deadline = time.monotonic() + 5
    while dbl.live("pipeline") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert dbl.live("pipeline") == 0
