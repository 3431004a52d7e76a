"""Queueing, timeouts, auth and the command line of the server. A gated fake provider makes the ordering
deterministic (no model needed); the command-line server runs in a subprocess (a crash fails the test)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from ovgenai_c.serve import ServeConfig, create_app
from ovgenai_c.serve.config import is_loopback
from serve_helpers import GatedProvider, ServerThread, free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
HELLO = [{"role": "user", "content": "Hello"}]


def gated_app(tiny_root, gate, providers, **kw):
    def factory(path, index):
        p = GatedProvider(gate)
        providers.append(p)
        return p
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", **kw)
    return create_app(cfg, provider_factory=factory)


def test_full_queue_answers_429_and_the_queue_drains_in_order(tiny_root):
    gate, providers = threading.Event(), []
    app = gated_app(tiny_root, gate, providers, parallel=1, max_queue=1, request_timeout=None)
    with ServerThread(app) as srv:
        first_chunk = threading.Event()
        out = {}

        def streaming():
            with httpx.Client(base_url=srv.url, timeout=120) as c:
                with c.stream("POST", "/v1/chat/completions", json={"messages": HELLO, "stream": True}) as r:
                    text = ""
                    for line in r.iter_lines():
                        if line.startswith("data: {"):
                            text += json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                            if text == "a":
                                first_chunk.set()
                    out["a"] = text

        def queued():
            with httpx.Client(base_url=srv.url, timeout=120) as c:
                out["b"] = c.post("/api/chat", json={"messages": HELLO, "stream": False}).json()

        ta = threading.Thread(target=streaming)
        ta.start()
        assert first_chunk.wait(60)
        slot = srv.state.registry.get_loaded("tiny")
        tb = threading.Thread(target=queued)
        tb.start()
        wait_until(lambda: slot.waiting == 1, "the second request waits in the queue")
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            r = c.post("/v1/chat/completions", json={"messages": HELLO})
            assert r.status_code == 429 and r.json()["error"]["code"] == "queue_full"
            r = c.post("/api/generate", json={"prompt": "x"})
            assert r.status_code == 429 and "queue is full" in r.json()["error"]
        assert slot.stats.rejected == 2
        gate.set()
        ta.join(60)
        tb.join(60)
        assert out["a"] == "ab" and out["b"]["message"]["content"] == "ab" and out["b"]["done"] is True
        assert slot.running == 0 and slot.waiting == 0 and slot.stats.completed == 2
        assert len(providers) == 1  # --parallel 1: one pipeline, requests queue on it


def test_waiting_past_the_timeout_is_504(tiny_root):
    gate, providers = threading.Event(), []
    app = gated_app(tiny_root, gate, providers, parallel=1, max_queue=4, request_timeout=0.5)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        with c.stream("POST", "/api/chat", json={"messages": HELLO}) as held:
            lines = held.iter_lines()  # (kept: a dropped iterator closes the response, i.e. disconnects)
            next(lines)  # the first chunk: the pipeline is busy until the gate opens
            r = c.post("/v1/chat/completions", json={"messages": HELLO})
            assert r.status_code == 504 and r.json()["error"]["type"] == "timeout_error"
            r = c.post("/api/chat", json={"messages": HELLO, "stream": False})
            assert r.status_code == 504 and "timeout" in r.json()["error"]
            gate.set()
        slot = srv.state.registry.get_loaded("tiny")
        wait_until(lambda: slot.running == 0 and slot.waiting == 0, "the pipeline is free")


def test_parallel_pipelines_serve_side_by_side(tiny_root):
    gate, providers = threading.Event(), []
    app = gated_app(tiny_root, gate, providers, parallel=2, max_queue=0)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        with c.stream("POST", "/api/chat", json={"messages": HELLO}) as a, \
                c.stream("POST", "/api/chat", json={"messages": HELLO}) as b:
            la, lb = a.iter_lines(), b.iter_lines()
            next(la)
            next(lb)
            assert [len(p.started) for p in providers] == [1, 1]  # one request on each pipeline
            assert c.post("/api/chat", json={"messages": HELLO}).status_code == 429  # --max-queue 0
            gate.set()


def test_a_non_streaming_client_that_leaves_cancels_its_generation(tiny_root):
    gate, providers = threading.Event(), []
    app = gated_app(tiny_root, gate, providers, parallel=1)
    with ServerThread(app) as srv:
        body = json.dumps({"messages": HELLO, "stream": False}).encode()
        with socket.create_connection(("127.0.0.1", srv.port)) as s:
            s.sendall(b"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            wait_until(lambda: providers and providers[0].started, "the generation started")
        slot = srv.state.registry.get_loaded("tiny")
        wait_until(lambda: slot.stats.cancelled == 1 and slot.running == 0, "the generation cancelled")
        assert providers[0].closed >= 1 and not gate.is_set()


def test_bearer_auth(tiny_root):
    gate, providers = threading.Event(), []
    app = gated_app(tiny_root, gate, providers, api_key="sekrit")
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        r = c.get("/v1/models")
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        assert r.headers["www-authenticate"] == "Bearer"
        r = c.get("/api/tags", headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401 and list(r.json()) == ["error"]
        assert c.get("/v1/models", headers={"Authorization": "Bearer sekrit"}).status_code == 200
        gate.set()
        r = c.post("/api/chat", json={"messages": HELLO, "stream": False}, headers={"Authorization": "Bearer sekrit"})
        assert r.json()["message"]["content"] == "ab"


def test_non_loopback_needs_a_key():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.10")
    with pytest.raises(ValueError, match="--api-key"):
        ServeConfig(host="0.0.0.0").check()
    ServeConfig(host="0.0.0.0", api_key="k").check()
    ServeConfig(host="0.0.0.0", allow_unauthenticated=True).check()
    with pytest.raises(ValueError, match="--parallel"):
        ServeConfig(parallel=0).check()


def _run(code, env=None):
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_the_package_imports_without_the_web_stack():
    r = _run("import sys, ovgenai_c, ovgenai_c.serve, ovgenai_c.cli\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn', 'anyio')))")
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr


def test_cli_without_the_extra_says_what_to_install():
    r = _run("import sys; sys.modules['starlette'] = None\n"
             "from ovgenai_c.cli import main; raise SystemExit(main(['serve']))")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "ovgenai-c: error: serve needs the 'starlette' package: pip install 'ovgenai_c[serve]'"]


def test_cli_refuses_a_public_host_without_a_key():
    r = _run("from ovgenai_c.cli import main; raise SystemExit(main(['serve', '--host', '0.0.0.0']))")
    assert r.returncode == 1 and "without an API key" in r.stderr and "--allow-unauthenticated" in r.stderr


def test_cli_serve_in_a_subprocess_survives_disconnect_and_ctrl_c(bundled, tiny_root):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ovgenai_c", "serve", "tiny", "--models-root", str(tiny_root),
                             "--port", str(port), "--library", str(bundled.path), "--no-cache"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"

        def up():
            assert proc.poll() is None, proc.communicate()[1]
            try:
                return httpx.get(url + "/api/version", timeout=5).status_code == 200
            except httpx.TransportError:
                return False
        wait_until(up, "the server answers", tries=30000)
        with httpx.Client(base_url=url, timeout=120) as c:
            with c.stream("POST", "/api/generate", json={"prompt": "Hello", "options": {"num_predict": 4000}}) as r:
                lines = [json.loads(x) for _, x in zip(range(2), r.iter_lines())]
            assert [x["done"] for x in lines] == [False, False]
            r = c.post("/v1/chat/completions", json={"messages": HELLO, "max_tokens": 3})
            assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 3
            with c.stream("POST", "/api/generate", json={"prompt": "Hello", "options": {"num_predict": 4000}}) as r:
                lines = r.iter_lines()
                next(lines)
                proc.send_signal(signal.SIGINT)  # shut down with a generation in flight
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "serving tiny" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_cli_serve_reports_a_port_in_use_before_loading_the_model(bundled, tiny_root):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "ovgenai_c", "serve", "tiny", "--models-root", str(tiny_root),
                            "--port", str(port), "--library", str(bundled.path), "--no-cache"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr and "serving tiny" not in r.stderr, r.stderr


def test_max_loaded_models_unloads_the_idle_one_and_refuses_when_all_are_busy(tiny_root):
    gate, providers = threading.Event(), []
    app = gated_app(tiny_root, gate, providers, max_loaded_models=1)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        registry = srv.state.registry
        gate.set()
        assert c.post("/api/chat", json={"model": "tiny", "messages": HELLO, "stream": False}).status_code == 200
        assert c.post("/api/chat", json={"model": "other/tiny", "messages": HELLO, "stream": False}).status_code == 200
        assert [s.name for s in registry.loaded()] == ["other/tiny"]  # tiny was idle: unloaded
        gate.clear()
        with c.stream("POST", "/api/chat", json={"model": "other/tiny", "messages": HELLO}) as held:
            lines = held.iter_lines()
            next(lines)
            r = c.post("/v1/chat/completions", json={"model": "tiny", "messages": HELLO})
            assert r.status_code == 503 and "--max-loaded-models" in r.json()["error"]["message"]
            gate.set()


@pytest.mark.parametrize("failure", ["not a model", "load"])
def test_a_model_that_fails_to_load_unloads_nothing(tiny_root, failure):
    # --max-loaded-models 1 with "tiny" loaded and idle: "other/tiny" cannot be served (its provider cannot be
    # made, or its pipeline fails to load). "tiny" stays (or comes back) and still answers.
    from ovgenai_c import errors

    gate, providers, closed = threading.Event(), [], []
    gate.set()

    class Failing(GatedProvider):
        def load(self):
            raise errors.ModelNotFoundError("openvino_model.xml is broken")

        def close(self):
            closed.append(self)

    def factory(path, index):
        if path.parent.name == "other":
            if failure == "not a model":
                raise errors.ModelNotFoundError(f"{path} is not a model")
            return Failing(gate)
        p = GatedProvider(gate)
        providers.append(p)
        return p

    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", max_loaded_models=1)
    with ServerThread(create_app(cfg, provider_factory=factory)) as srv, \
            httpx.Client(base_url=srv.url, timeout=60) as c:
        registry = srv.state.registry
        assert c.post("/api/chat", json={"model": "tiny", "messages": HELLO, "stream": False}).status_code == 200
        before = registry.get_loaded("tiny")
        r = c.post("/api/chat", json={"model": "other/tiny", "messages": HELLO, "stream": False})
        assert r.status_code == 404 and ("not a model" if failure == "not a model" else "broken") in r.json()["error"]
        assert [s.name for s in registry.loaded()] == ["tiny"]
        if failure == "not a model":
            assert registry.get_loaded("tiny") is before  # never unloaded
        else:
            assert len(closed) == 1  # the failed one was freed; tiny's slot was put back
        r = c.post("/api/chat", json={"model": "tiny", "messages": HELLO, "stream": False})
        assert r.status_code == 200 and r.json()["message"]["content"] == "ab"


def test_info_says_how_concurrent_requests_are_scheduled(tiny_root):
    gate, providers = threading.Event(), []
    gate.set()
    app = gated_app(tiny_root, gate, providers, parallel=3)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        assert c.post("/api/chat", json={"messages": HELLO, "stream": False}).status_code == 200
        (m,) = c.get("/ovgenai_c/info").json()["models"]
        assert m["scheduling"] == {"mode": "pool", "pipelines": 3}  # a pool of --parallel pipelines
        # a batching slot says so (tests/serve/test_serve_batching.py checks it on the bundled backend)
