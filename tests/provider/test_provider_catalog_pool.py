"""Catalog (listing, path containment) and the session pool (reuse, TTL, LRU cap, in-use protection, drain)."""
from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from ovgenai_c.provider import Catalog, CatalogError, PoolClosedError, Provider, SessionPool, model_digest
from provider_helpers import make_ir
from testsupport import run_threads

TINY_GGUF = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "tiny.gguf"


# --- catalog ------------------------------------------------------------------------------------------
@pytest.fixture
def root(tmp_path):
    r = tmp_path / "models"
    make_ir(r / "alpha")
    make_ir(r / "family" / "beta" / "ir", profile={"max_output_tokens": 9})
    shutil.copyfile(TINY_GGUF, r / "family" / "beta" / "beta.gguf")
    shutil.copyfile(TINY_GGUF, r / "tiny.gguf")
    make_ir(r / "broken", profile_text='{"max_output_tokns": 1}')
    (r / "notes").mkdir()
    (r / "notes" / "readme.txt").write_text("not a model")
    make_ir(tmp_path / "outside")
    return r


def test_catalog_lists_ir_and_gguf_with_profiles(root):
    entries = {e.name: e for e in Catalog(root).list()}
    assert set(entries) == {"alpha", "broken", "family/beta/beta.gguf", "family/beta/ir", "tiny.gguf"}
    assert entries["alpha"].format == "ir" and entries["tiny.gguf"].format == "gguf"
    assert entries["family/beta/ir"].profile.max_output_tokens == 9
    assert entries["tiny.gguf"].size == TINY_GGUF.stat().st_size
    assert entries["broken"].profile is None and "max_output_tokns" in entries["broken"].profile_error
    assert entries["alpha"].to_dict()["format"] == "ir"


def test_catalog_resolves_names_and_model_folders(root):
    cat = Catalog(root)
    assert cat.resolve("alpha").path == root / "alpha"
    assert cat.resolve("family/beta", prefer="ir").name == "family/beta/ir"
    assert cat.resolve("family/beta", prefer="gguf").name == "family/beta/beta.gguf"
    with pytest.raises(CatalogError, match=r"no model named 'alpah'.*did you mean 'alpha'"):
        cat.resolve("alpah")
    with pytest.raises(CatalogError, match="neither an OpenVINO IR model folder nor a .gguf"):
        cat.resolve("notes")


@pytest.mark.parametrize("name", ["../outside", "alpha/../../outside", "..", "family/../../outside"])
def test_catalog_refuses_dotdot(root, name):
    with pytest.raises(CatalogError, match="leaves the models root"):
        Catalog(root).resolve(name)


def test_catalog_refuses_absolute_paths(root, tmp_path):
    with pytest.raises(CatalogError, match="absolute path"):
        Catalog(root).resolve(str(tmp_path / "outside"))
    with pytest.raises(CatalogError, match="absolute path"):
        Catalog(root).resolve(str(root / "alpha"))


def test_catalog_refuses_escaping_symlinks_but_keeps_inner_ones(root, tmp_path):
    os.symlink(tmp_path / "outside", root / "escape")
    os.symlink(root / "alpha", root / "alias")
    os.symlink(tmp_path, root / "family" / "up")
    cat = Catalog(root)
    with pytest.raises(CatalogError, match="resolves outside the models root"):
        cat.resolve("escape")
    with pytest.raises(CatalogError, match="resolves outside the models root"):
        cat.resolve("family/up/outside")
    assert cat.resolve("alias").format == "ir"
    names = {e.name for e in cat.list()}
    assert "alias" in names and "escape" not in names and not any(n.startswith("family/up") for n in names)


def test_catalog_root_from_env(monkeypatch, root):
    monkeypatch.setenv("OVGENAI_C_MODELS", str(root))
    assert Catalog().root == root
    assert Catalog(None).resolve("alpha").format == "ir"


def test_empty_or_missing_root(tmp_path):
    assert Catalog(tmp_path / "nope").list() == []
    with pytest.raises(CatalogError, match="holds no models"):
        Catalog(tmp_path / "nope").resolve("x")


# --- pool with a fake factory and an injectable clock ----------------------------------------------------
class FakePipe:
    def __init__(self, path, device, props):
        self.path, self.device, self.props = path, device, props
        self.closed = False

    def close(self):
        self.closed = True


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


@pytest.fixture
def fake(tmp_path):
    made = []

    def factory(path, device, props, library):
        p = FakePipe(path, device, props)
        made.append(p)
        return p

    clock = Clock()
    pool = SessionPool(ttl=60, max_resident=2, factory=factory, clock=clock)
    models = [make_ir(tmp_path / f"m{i}") for i in range(3)]
    yield pool, made, clock, models
    pool.close(timeout=1)


def test_pool_reuses_sessions_by_identity(fake):
    pool, made, clock, (m0, m1, _) = fake
    with pool.lease(m0) as a:
        first = a.pipeline
        assert a.reused is False
    with pool.lease(m0) as b:
        assert b.pipeline is first and b.reused is True
    with pool.lease(m0, device="GPU") as c:
        assert c.pipeline is not first and c.pipeline.device == "GPU"
    with pool.lease(m0, properties={"X": 1}) as d:
        assert d.pipeline.props == {"X": 1}
    assert pool.stats["created"] == 3 and pool.stats["reused"] == 1
    # concurrent leases share one session, reference-counted
    a, b = pool.lease(m1), pool.lease(m1)
    assert a.pipeline is b.pipeline
    assert [s["refs"] for s in pool.sessions() if s["path"] == os.path.realpath(m1)] == [2]
    a.release()
    a.release()  # idempotent
    assert [s["refs"] for s in pool.sessions() if s["path"] == os.path.realpath(m1)] == [1]
    b.release()


def test_pool_key_includes_file_digest(fake):
    pool, made, clock, (m0, _, _) = fake
    d0 = model_digest(m0)
    with pool.lease(m0) as a:
        old = a.pipeline
    st = (m0 / "openvino_model.bin").stat()
    os.utime(m0 / "openvino_model.bin", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert model_digest(m0) != d0
    with pool.lease(m0) as b:
        assert b.pipeline is not old  # changed files = a different model
    (m0 / "openvino_model.bin").write_text("x")
    assert model_digest(m0) != d0


def test_pool_idle_ttl_eviction(fake):
    pool, made, clock, (m0, _, _) = fake
    with pool.lease(m0):
        pass
    clock.t += 59
    assert pool.evict_idle() == 0 and not made[0].closed
    clock.t += 2
    assert pool.evict_idle() == 1 and made[0].closed and len(pool) == 0
    with pool.lease(m0) as a:
        assert a.pipeline is made[1]


def test_pool_lru_cap(fake):
    pool, made, clock, (m0, m1, m2) = fake
    for m in (m0, m1):
        with pool.lease(m):
            clock.t += 1
    with pool.lease(m0):  # m0 becomes the most recently used
        clock.t += 1
    with pool.lease(m2):
        pass
    assert len(pool) == 2
    assert made[1].closed and not made[0].closed and not made[2].closed  # m1 was least recently used
    assert pool.stats["evicted"] == 1


def test_pool_never_evicts_leased_sessions(fake):
    pool, made, clock, (m0, m1, m2) = fake
    held = [pool.lease(m) for m in (m0, m1, m2)]  # over the cap, all in use
    assert len(pool) == 3 and not any(p.closed for p in made)
    clock.t += 1000  # far past the TTL
    assert pool.evict_idle() == 0 and not any(p.closed for p in made)
    held[1].release()
    assert made[1].closed  # idle and past TTL / over the cap: evicted on release
    assert not made[0].closed and not made[2].closed
    held[0].release()
    held[2].release()


def test_pool_close_drains(fake):
    pool, made, clock, (m0, m1, _) = fake
    with pool.lease(m0):
        pass
    busy = pool.lease(m1)
    done = []

    def closer():
        done.append(pool.close(timeout=10))

    t = threading.Thread(target=closer)
    t.start()
    time.sleep(0.2)
    assert made[0].closed and not made[1].closed and t.is_alive()  # waits for the lease
    with pytest.raises(PoolClosedError):
        pool.lease(m0)
    busy.release()
    t.join(5)
    assert done == [True] and made[1].closed and len(pool) == 0


def test_pool_close_timeout_reports_unfinished(fake):
    pool, made, clock, (m0, _, _) = fake
    busy = pool.lease(m0)
    assert pool.close(timeout=0.05) is False and not made[0].closed
    busy.release()
    assert made[0].closed  # closed as soon as it came back


def test_pool_factory_error_is_not_cached(tmp_path):
    calls = []

    def factory(path, device, props, library):
        calls.append(1)
        raise RuntimeError("boom")

    pool = SessionPool(factory=factory)
    m = make_ir(tmp_path / "m")
    for _ in range(2):
        with pytest.raises(RuntimeError, match="boom"):
            pool.lease(m)
    assert len(calls) == 2 and len(pool) == 0
    pool.close()


def test_pool_is_thread_safe(fake):
    pool, made, clock, (m0, m1, _) = fake

    def worker(i):
        m = (m0, m1)[i % 2]
        for _ in range(200):
            with pool.lease(m) as l:
                assert not l.pipeline.closed

    errors = run_threads(worker, 4, timeout=600)
    assert not errors and pool.stats["created"] == 2 and pool.stats["reused"] == 798


# --- pool with real pipelines over the ABI double -----------------------------------------------------
def test_provider_sessions_pooled_over_the_double(tmp_path, ctl):
    pool = SessionPool(ttl=None, max_resident=1)
    a, b = make_ir(tmp_path / "a"), make_ir(tmp_path / "b")
    pa = Provider(a, library=ctl.library, pool=pool)
    pb = Provider(b, library=ctl.library, pool=pool)
    assert pa.prompt("one") == "Echo: one"
    assert pa.prompt("two") == "Echo: two"
    assert pool.stats == {"created": 1, "reused": 1, "evicted": 0, "closed": 0}
    assert ctl.live("pipeline") == 1
    assert pb.prompt("three") == "Echo: three"  # cap 1: a's idle session is evicted (its pipeline freed)
    assert pool.stats["evicted"] == 1 and len(pool) == 1
    assert pool.close() is True
    assert ctl.live("pipeline") == 0


def test_forgotten_lease_is_released_by_the_pool(fake):
    import gc

    pool, made, clock, (m0, _, _) = fake
    lease = pool.lease(m0)
    assert pool.sessions()[0]["refs"] == 1
    del lease
    gc.collect()
    assert pool.sessions()[0]["refs"] == 0  # queued by the finalizer, applied by the next pool operation
    assert pool.close(timeout=1) is True and made[0].closed
