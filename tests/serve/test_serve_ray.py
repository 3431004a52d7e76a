"""Ray Serve: two replicas of the server on a local Ray instance (``ray.init(num_cpus=2)``), OpenAI and Ollama
traffic through Ray's HTTP proxy; both replicas answer (``x-ovgenai-c-replica``), with the same greedy answers,
and everything shuts down. Needs the ``ray`` extra."""
from __future__ import annotations

import json
import socket
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

pytest.importorskip("ray.serve", reason="needs the ray extra: pip install 'ovgenai_c[serve,ray]'")

from ovgenai_c.serve import ServeConfig  # noqa: E402
from ovgenai_c.serve import ray_app  # noqa: E402
from serve_helpers import free_port, wait_until  # noqa: E402
from testsupport import default_sigint  # noqa: E402

HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture(scope="module")
def ray_server(bundled, tiny_root):
    import ray

    port = free_port()
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny")
    srv = ray_app.run_replicas(cfg, replicas=2, port=port, library=str(bundled.path), num_cpus=1,
                               ray_init={"num_cpus": 2, "object_store_memory": 80 * 1024 * 1024,
                                         "log_to_driver": False})
    try:
        yield srv
    finally:
        srv.shutdown()
        assert not ray.is_initialized()
        wait_until(lambda: not _listening(port), "Ray's proxy stopped listening")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _replicas_seen(url: str, send, rounds: int = 20) -> "set[str]":
    """Send requests 4 at a time until both replicas have answered (bounded by ``rounds``)."""
    seen: "set[str]" = set()
    with ThreadPoolExecutor(4) as ex:
        for _ in range(rounds):
            for r in ex.map(lambda _i: send(), range(4)):
                assert r.status_code == 200, r.text
                seen.add(r.headers[ray_app.REPLICA_HEADER])
            if len(seen) >= 2:
                break
    return seen


def test_both_replicas_answer_openai_and_ollama_through_rays_proxy(ray_server):
    url = ray_server.url
    with httpx.Client(base_url=url, timeout=120) as c:
        answers: "dict[str, set[str]]" = {}

        def openai_chat():
            r = c.post("/v1/chat/completions", json={"messages": HELLO, "max_tokens": 6, "temperature": 0})
            if r.status_code == 200:
                answers.setdefault(r.headers[ray_app.REPLICA_HEADER], set()).add(
                    r.json()["choices"][0]["message"]["content"])
            return r

        seen = _replicas_seen(url, openai_chat)
        assert len(seen) == 2, seen  # each replica served some of the traffic
        assert len({a for v in answers.values() for a in v}) == 1  # greedy: the same answer from either replica
        ollama = _replicas_seen(url, lambda: c.post("/api/chat", json={"messages": HELLO, "stream": False,
                                                                        "options": {"num_predict": 4}}))
        assert ollama == seen
        assert c.get("/api/tags").json()["models"]
        assert c.get("/v1/models").json()["object"] == "list"


def test_streaming_and_errors_pass_through_the_proxy(ray_server):
    from openai import BadRequestError, OpenAI

    client = OpenAI(base_url=ray_server.url + "/v1", api_key="unused", max_retries=0)
    parts = [ch.choices[0].delta.content or "" for ch in client.chat.completions.create(
        model="tiny", messages=HELLO, max_tokens=6, temperature=0, stream=True) if ch.choices]
    whole = client.chat.completions.create(model="tiny", messages=HELLO, max_tokens=6, temperature=0)
    assert "".join(parts) == whole.choices[0].message.content and "".join(parts)
    with pytest.raises(BadRequestError):
        client.chat.completions.create(model="tiny", messages=HELLO, n=2)
    with httpx.Client(base_url=ray_server.url, timeout=120) as c:
        with c.stream("POST", "/api/generate", json={"prompt": "Hello", "options": {"num_predict": 5}}) as r:
            lines = [json.loads(x) for x in r.iter_lines() if x.strip()]
        assert lines[-1]["done"] is True and all(not x["done"] for x in lines[:-1]) and len(lines) >= 2
        bad = c.post("/api/chat", json={"messages": "nope"})
        assert bad.status_code == 400 and "error" in bad.json()


def test_replica_spec_round_trips_the_config(tiny_root):
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", parallel=2, max_queue=3)
    spec = ray_app.ReplicaSpec.of(cfg, library="/x.so", device="CPU")
    assert spec.serve_config() == cfg
    with pytest.raises(ValueError, match="--parallel"):
        ray_app.ReplicaSpec.of(ServeConfig(parallel=0))


def test_cli_serve_ray_replicas_answers_and_stops_on_ctrl_c(bundled, tiny_root):
    import signal
    import subprocess
    import sys
    from pathlib import Path

    port = free_port()
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "ovgenai_c", "serve", "tiny", "--models-root", str(tiny_root),
                             "--port", str(port), "--library", str(bundled.path), "--no-cache", "--ray-replicas", "1",
                             "--ray-cpus", "0.5"], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)  # Ctrl-C reaches it also when this suite ignores SIGINT
    try:
        url = f"http://127.0.0.1:{port}"
        said = []
        for line in proc.stderr:  # until the command says every replica is up (EOF if it dies)
            said.append(line)
            if "Ray Serve replica(s)" in line:
                break
        assert proc.poll() is None, "".join(said)[-3000:]
        assert f"on 1 Ray Serve replica(s) at {url}" in said[-1]
        r = httpx.post(url + "/v1/chat/completions", json={"messages": HELLO, "max_tokens": 3}, timeout=120)
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 3
        assert r.headers[ray_app.REPLICA_HEADER]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-3000:]
        assert "Traceback" not in err
        assert not _listening(port)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_cli_refuses_a_bad_replica_count(bundled, tiny_root):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "ovgenai_c", "serve", "tiny", "--models-root", str(tiny_root),
                        "--library", str(bundled.path), "--ray-replicas", "0"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0 and "--ray-replicas must be >= 1, got 0" in r.stderr
