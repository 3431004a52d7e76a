"""`ovgenai-c generate` through a running `ovgenai-c serve` (a real server in a subprocess on the tiny model), and
its fallbacks to the in-process path."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from cli_helpers import ROOT, cli_env, run_cli
from testsupport import default_sigint

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

TINY_IR = ROOT / "tests" / "fixtures" / "tiny" / "ir"
GREEDY = ("-n", "8", "--temperature", "0")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def bundled_path() -> Path:
    from testsupport import bundled_library_path

    p = bundled_library_path()
    if p is None or not p.is_file():
        pytest.skip("the bundled backend is not built")
    return p


def _serve_world(bundled_path, tmp_path_factory, *extra):
    """(env, models root, server URL): `ovgenai-c serve tiny [extra]` running in a subprocess on a free port."""
    tmp = tmp_path_factory.mktemp("srv")
    root = tmp / "models"
    shutil.copytree(TINY_IR, root / "tiny")
    env = cli_env(bundled_path, tmp)
    env.pop("OVGENAI_C_API_KEY", None)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "ovgenai_c", "serve", "--models-root", str(root), "tiny",
                             "--port", str(port), *extra], env=env, cwd=str(ROOT), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        for _ in range(1200):  # bounded wait for the server to listen (not a timing assertion)
            if proc.poll() is not None:
                pytest.fail(f"the server exited: {proc.stderr.read()}")
            try:
                _get(url + "/ovgenai_c/info")
                break
            except OSError:
                threading.Event().wait(0.1)
        else:
            pytest.fail("the server never answered")
        yield env, root, url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def world(bundled_path, tmp_path_factory):
    """`ovgenai-c serve tiny` (on the bundled backend: its requests share one continuous-batching pipeline)."""
    yield from _serve_world(bundled_path, tmp_path_factory)


@pytest.fixture(scope="module")
def world_pool(bundled_path, tmp_path_factory):
    """`ovgenai-c serve tiny --no-batching`: the pool of pipelines, which run as the in-process command line does
    (SDPA, the previous turn's KV cache reused)."""
    yield from _serve_world(bundled_path, tmp_path_factory, "--no-batching")


def _stats(url: str) -> dict:
    return _get(url + "/api/ps")["models"][0]["ovgenai_c"]["stats"]


def test_info_names_the_server_and_its_model(world):
    env, root, url = world
    info = _get(url + "/ovgenai_c/info")
    assert info["name"] == "ovgenai_c" and info["default_model"] == "tiny"
    (m,) = info["models"]
    assert m["path"] == os.path.realpath(root / "tiny") and m["library_kind"] == "bundled" and m["device"] == "CPU"


def test_answer_through_server_equals_in_process(world):
    env, root, url = world
    before = _stats(url)["completed"]
    served = run_cli(env, "generate", "--models-root", str(root), "--server", url, "-v", "tiny", "Hello", *GREEDY)
    local = run_cli(env, "generate", "--models-root", str(root), "--no-server", "tiny", "Hello", *GREEDY)
    assert served.returncode == 0, served.stderr
    assert local.returncode == 0, local.stderr
    assert served.stdout == local.stdout and served.stdout.strip()
    assert f"[server {url}," in served.stderr
    assert _stats(url)["completed"] == before + 1  # the server answered it, exactly once


def test_json_has_the_in_process_fields(world):
    env, root, url = world
    served = run_cli(env, "generate", "--models-root", str(root), "--server", url, "--json", "tiny", "Hi", *GREEDY)
    local = run_cli(env, "generate", "--models-root", str(root), "--no-server", "--json", "tiny", "Hi", *GREEDY)
    assert served.returncode == 0 and local.returncode == 0, served.stderr + local.stderr
    a, b = json.loads(served.stdout), json.loads(local.stdout)
    assert a.get("server") == url and "server" not in b
    assert set(b) <= set(a) and set(a["perf"]) == set(b["perf"])
    for k in ("model", "format", "device", "library_kind", "text", "finish_reason", "usage"):
        assert a[k] == b[k], k


def test_same_options_as_in_process(world):
    env, root, url = world
    opts = ("-n", "6", "--temperature", "0.8", "--top-k", "5", "--top-p", "0.9", "--seed", "7", "--system", "Be kind")
    served = run_cli(env, "generate", "--models-root", str(root), "--server", url, "tiny", "Hello", *opts)
    local = run_cli(env, "generate", "--models-root", str(root), "--no-server", "tiny", "Hello", *opts)
    assert served.returncode == 0 and local.returncode == 0, served.stderr + local.stderr
    assert served.stdout == local.stdout


def test_model_the_server_does_not_serve_runs_in_process(world, tmp_path):
    env, root, url = world
    elsewhere = shutil.copytree(TINY_IR, tmp_path / "elsewhere" / "tiny")
    before = _stats(url)["requests"]
    r = run_cli(env, "generate", "--server", url, "-v", str(elsewhere), "Hello", *GREEDY)
    assert r.returncode == 0, r.stderr
    assert "does not serve" in r.stderr and r.stdout.strip()
    assert _stats(url)["requests"] == before


def test_unreachable_server_runs_in_process(world):
    env, root, url = world
    dead = f"http://127.0.0.1:{_free_port()}"
    r = run_cli(env, "generate", "--models-root", str(root), "--server", dead, "-v", "tiny", "Hello", *GREEDY)
    assert r.returncode == 0, r.stderr
    assert f"no server at {dead}" in r.stderr and r.stdout.strip()


def test_not_ours_runs_in_process(world, tmp_path):
    env, root, url = world
    # a plain HTTP server that is not ovgenai-c: 404 on /ovgenai_c/info
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    other = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                              "--directory", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                threading.Event().wait(0.1)
        r = run_cli(env, "generate", "--models-root", str(root), "--server", f"http://127.0.0.1:{port}", "-v",
                    "tiny", "Hello", *GREEDY)
    finally:
        other.terminate()
        other.wait(30)
    assert r.returncode == 0, r.stderr
    assert "is not an ovgenai-c server" in r.stderr and r.stdout.strip()


def test_server_off_in_the_environment(world):
    env, root, url = world
    r = run_cli(dict(env, OVGENAI_C_SERVER="off"), "generate", "--models-root", str(root), "-v", "tiny", "Hello",
                *GREEDY)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr
    assert "[in-process: OVGENAI_C_SERVER=off]" in r.stderr


def test_server_from_the_environment(world):
    env, root, url = world
    before = _stats(url)["completed"]
    r = run_cli(dict(env, OVGENAI_C_SERVER=url), "generate", "--models-root", str(root), "tiny", "Hello", *GREEDY)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr
    assert _stats(url)["completed"] == before + 1


def test_no_server_never_asks_it(world):
    env, root, url = world
    before = _stats(url)["requests"]
    r = run_cli(env, "generate", "--models-root", str(root), "--server", url, "--no-server", "tiny", "Hello", *GREEDY)
    assert r.returncode == 0, r.stderr
    assert _stats(url)["requests"] == before


class _StubServer:
    """A stdlib HTTP server posing as ovgenai-c for ``path``: /api/generate answers 400, or a stream that ends in an
    error line (``midway``)."""

    def __init__(self, path: Path, midway: bool) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.auth: list = []
        seen = self.auth
        info = {"name": "ovgenai_c", "version": "0", "default_model": "m",
                "models": [{"name": "m", "path": os.path.realpath(path), "loaded": True, "device": "CPU"}]}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status, body):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                seen.append(self.headers.get("Authorization"))
                self._send(200, json.dumps(info).encode())

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                seen.append(self.headers.get("Authorization"))
                if midway:
                    self._send(200, b'{"response": "par", "done": false}\n{"error": "the pipeline failed"}\n')
                else:
                    self._send(400, b'{"error": "option \'temperature\' is bad\\nsecond line"}')

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(30)


@pytest.mark.parametrize("midway", [False, True])
def test_server_error_is_one_line(world, midway):
    env, root, url = world
    with _StubServer(root / "tiny", midway) as stub:
        r = run_cli(env, "generate", "--models-root", str(root), "--server", stub.url, "tiny", "Hello", *GREEDY)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ovgenai-c: error: "), r.stderr
    assert ("the pipeline failed" if midway else "'temperature' is bad") in lines[0]
    assert r.stdout == ("par\n" if midway else "")


def test_api_key_is_sent_as_bearer(world):
    env, root, url = world
    with _StubServer(root / "tiny", midway=True) as stub:
        run_cli(dict(env, OVGENAI_C_API_KEY="k3y"), "generate", "--models-root", str(root), "--server", stub.url,
                "tiny", "Hello", *GREEDY)
    assert stub.auth == ["Bearer k3y", "Bearer k3y"]  # the info probe, then the request


def test_ctrl_c_mid_answer_exits_130_and_server_goes_on(world):
    env, root, url = world
    before = _stats(url)["cancelled"]
    child = subprocess.Popen([sys.executable, "-m", "ovgenai_c", "generate", "--models-root", str(root), "--server",
                              url, "tiny", "Hello", "-n", "100000", "--temperature", "1", "--seed", "1"],
                             env=env, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=default_sigint)  # Ctrl-C reaches it also when this suite ignores SIGINT
    try:
        assert child.stdout.read(1)  # the answer has started streaming
        child.send_signal(signal.SIGINT)
        rc = child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert rc == 130, child.stderr.read().decode()
    for _ in range(600):  # bounded: the server sees the closed connection and cancels
        if _stats(url)["cancelled"] > before:
            break
        threading.Event().wait(0.1)
    assert _stats(url)["cancelled"] == before + 1
    r = run_cli(env, "generate", "--models-root", str(root), "--server", url, "tiny", "Hello", *GREEDY)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr


def test_chat_through_server_equals_in_process(world_pool):
    # On the pool the server runs a chat as the in-process command line does (SDPA, the previous turn's KV cache
    # reused). Batched, each turn's history is encoded again from its text, so an answer can differ at a near-tie
    # (tests/serve/test_serve_batching.py covers the batched answers).
    env, root, url = world_pool
    before = _stats(url)["completed"]
    turns = "Hello\nHow are you\n/set temperature 0\nAnd you\n"
    served = run_cli(env, "chat", "--models-root", str(root), "--server", url, "-n", "6", "--temperature", "0",
                     "--system", "Be brief", "tiny", input=turns)
    local = run_cli(env, "chat", "--models-root", str(root), "--no-server", "-n", "6", "--temperature", "0",
                    "--system", "Be brief", "tiny", input=turns)
    assert served.returncode == 0 and local.returncode == 0, served.stderr + local.stderr
    assert served.stdout == local.stdout and served.stdout.count("\n") >= 4
    assert _stats(url)["completed"] == before + 3  # the three turns, each with the conversation so far
