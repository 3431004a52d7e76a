"""The server's own collections (ovgenai_c/serve/heap.py): when they are due, the setting, and the background task
of a running app (with a fake heap, so the same on every interpreter)."""
from __future__ import annotations

import gc

import httpx
import pytest

from ovgenai_c.serve import ServeConfig, create_app
from ovgenai_c.serve import heap
from serve_helpers import ServerThread, wait_until
from testsupport import REFCOUNTED

MB = 1 << 20
PYPY_STATS = hasattr(gc, "_get_stats")  # the collector tells its heap (PyPy)


class FakeHeap:
    def __init__(self, size: int) -> None:
        self.size = size
        self.collected = 0

    def measure(self) -> int:
        return self.size

    def collect(self) -> None:
        self.collected += 1


def test_a_collection_comes_once_the_size_grew_by_the_step_since_the_last():
    p = FakeHeap(100 * MB)
    keeper = heap.HeapKeeper(16 * MB, p.measure, p.collect)
    assert keeper.check() is False and keeper.mark == 100 * MB  # the first check is the baseline
    p.size += 16 * MB - 1
    assert keeper.check() is False and p.collected == 0
    p.size += 1
    assert keeper.check() is True and p.collected == 1 and keeper.collections == 1
    assert keeper.mark == 116 * MB  # (what the measure gives after it: the fake frees nothing)
    p.size += 10 * MB
    assert keeper.check() is False and p.collected == 1
    p.size += 6 * MB
    assert keeper.check() is True and p.collected == 2


def test_no_collection_without_a_step_or_a_measure():
    p = FakeHeap(100 * MB)
    off = heap.HeapKeeper(0, p.measure, p.collect)
    for _ in range(3):
        p.size *= 2
        assert off.check() is False
    blind = heap.HeapKeeper(MB, lambda: 0, p.collect)  # a collector that tells no heap (CPython)
    assert [blind.check() for _ in range(3)] == [False] * 3 and p.collected == 0


def test_the_step_setting(monkeypatch):
    monkeypatch.delenv(heap.COLLECT_ENV, raising=False)
    assert heap.collect_step_bytes() == (heap.DEFAULT_COLLECT_MB * MB if PYPY_STATS else 0)
    monkeypatch.setenv(heap.COLLECT_ENV, "16")
    assert heap.collect_step_bytes() == 16 * MB
    monkeypatch.setenv(heap.COLLECT_ENV, "0")
    assert heap.collect_step_bytes() == 0
    for bad in ("lots", "-1"):
        monkeypatch.setenv(heap.COLLECT_ENV, bad)
        with pytest.raises(ValueError, match=heap.COLLECT_ENV):
            heap.collect_step_bytes()
        with pytest.raises(ValueError, match=heap.COLLECT_ENV):
            create_app(ServeConfig())


def test_a_running_server_collects_when_due_and_says_so(monkeypatch, tiny_root):
    monkeypatch.setenv(heap.COLLECT_ENV, "8")
    monkeypatch.setattr(heap, "CHECK_EVERY_S", 0.01)
    app = create_app(ServeConfig(models_root=tiny_root))
    keeper = app.state.heap_keeper
    p = FakeHeap(200 * MB)
    keeper._measure, keeper._collect = p.measure, p.collect
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        wait_until(lambda: keeper.mark == 200 * MB, "the first check")
        p.size += 8 * MB
        wait_until(lambda: p.collected == 1, "a collection")
        p.size += 4 * MB
        info = c.get("/ovgenai_c/info").json()
        assert info["heap"] == {"collect_step_mb": 8.0, "collections": 1}
        p.size += 4 * MB
        wait_until(lambda: p.collected == 2, "the next collection")
    assert p.collected == 2  # the task ended with the server


def test_the_default_step_is_64_mb_on_pypy_and_off_on_cpython(monkeypatch, tiny_root):
    monkeypatch.delenv(heap.COLLECT_ENV, raising=False)
    app = create_app(ServeConfig(models_root=tiny_root))
    assert app.state.heap_keeper.step_bytes == (heap.DEFAULT_COLLECT_MB * MB if PYPY_STATS else 0)
    assert PYPY_STATS == (not REFCOUNTED)  # (the interpreters the test command runs)


def test_the_measure_is_the_collectors_heap_where_it_tells_it():
    if not PYPY_STATS:
        assert heap.heap_bytes() == 0  # CPython: no such figure, nothing to collect
    else:  # PyPy: arenas + separately allocated objects, not the resident size
        before = heap.heap_bytes()
        kept = [[i] * 64 for i in range(200_000)]  # ~100 MB of old objects once collected minor-wise
        gc.collect()
        assert heap.heap_bytes() - before > 20 << 20
        del kept
        gc.collect()
        assert heap.heap_bytes() - before < 20 << 20


def test_a_failing_check_stops_the_collections_not_the_server(monkeypatch, tiny_root, capfd):
    monkeypatch.setenv(heap.COLLECT_ENV, "8")
    monkeypatch.setattr(heap, "CHECK_EVERY_S", 0.01)
    app = create_app(ServeConfig(models_root=tiny_root))
    calls = []

    def broken() -> int:
        calls.append(1)
        raise OSError("no stats today")
    app.state.heap_keeper._measure = broken
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        wait_until(lambda: calls, "the first check")
        assert c.get("/").text == "ovgenai_c is running"
        assert c.get("/ovgenai_c/info").json()["heap"]["collections"] == 0
    assert calls == [1]
    assert "the server stops its own collections: OSError: no stats today" in capfd.readouterr().err
