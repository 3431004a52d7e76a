"""The ``serve`` section: ``ovgenai-c serve`` under 1, 2, 4, 8 concurrent streaming HTTP clients, side by side in
the same rounds with openvino_genai's ContinuousBatchingPipeline in-process (its own worker) and with ovgenai_c
answering one request at a time in-process (no server).

Clients are threads with the standard library's HTTP client; each sends its requests back to back to
``/v1/chat/completions`` with ``stream: true`` and parses the server-sent events itself: TTFT is the arrival of
the first chunk carrying content, the token count is the final chunk's ``usage`` (``stream_options``). Aggregate
tokens/s = all completion tokens of a level / the level's wall time. The server reports how it schedules
concurrent requests (``/ovgenai_c/info``: a pool of pipelines, or batching), and the section says which."""
from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ovgenai_c.provider.remote import sse_data

from .stats import median, percentile, ratio_stats

SERVER = "ovgenai_c serve"
GENAI_CB = "genai[CB]"
SEQUENTIAL = "ovgenai_c, one at a time"
SERVE_PROMPT = "Write a long story about a lighthouse keeper and the sea."
# the targets: at the top level (8 clients) >= 3x single-client throughput and >= GenAI CB; p95 TTFT at the
# top level <= 3x the single-client (median) TTFT
TARGETS = {"scaling": 3.0, "vs_genai_cb": 1.0, "ttft_growth": 3.0}

SERVER_BOOT = ("import sys; del sys.path[0]; from ovgenai_c.cli import main; sys.exit(main(sys.argv[1:]))")


class ServerProcess:
    """``ovgenai-c serve`` on 127.0.0.1 in a child process (this tree's ovgenai_c through PYTHONPATH); ready once
    ``/ovgenai_c/info`` answers and the default model is loaded."""

    def __init__(self, model: Path, library: Optional[str], env: Dict[str, str], log: Path, timeout: float,
                 parallel: Optional[int] = None, extra_args: Sequence[str] = ()) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [sys.executable, "-c", SERVER_BOOT, "serve", str(model), "--port", str(self.port), "--max-queue", "256",
                *(["--library", library] if library else []), *(["--parallel", str(parallel)] if parallel else []),
                *extra_args]
        self.command = args[3:]
        self._log = open(log, "wb")
        self.log = log
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                     env=env)
        self.info = self._wait_ready(timeout)
        self.ready_s = time.perf_counter() - t0

    def _wait_ready(self, timeout: float) -> Dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}): {self.tail()}")
            try:
                info = get_json(self.url + "/ovgenai_c/info", 5.0)
                if any(m.get("loaded") for m in info.get("models", [])):
                    return info
            except (OSError, ValueError, http.client.HTTPException):
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the server did not answer within {timeout:.0f} s: {self.tail()}")

    def scheduling(self) -> Dict[str, Any]:
        """How the server runs concurrent requests for its default model (what /ovgenai_c/info says)."""
        info = get_json(self.url + "/ovgenai_c/info", 10.0)
        model = next((m for m in info.get("models", []) if m.get("name") == info.get("default_model")), None)
        return (model or {}).get("scheduling") or {"mode": "unknown (the server does not say)"}

    def tail(self, n: int = 8) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-n:])
        except OSError:
            return "?"

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, timeout: float) -> Dict[str, Any]:
    host, port, path = _split(url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise OSError(f"GET {path}: HTTP {resp.status}")
        return json.loads(body)
    finally:
        conn.close()


def _split(url: str) -> "tuple[str, int, str]":
    rest = url.split("://", 1)[1]
    hostport, _, path = rest.partition("/")
    host, _, port = hostport.partition(":")
    return host, int(port or 80), "/" + path


# the server-sent-event parser the remote provider reads OpenAI-compatible streams with
sse_events = sse_data


def stream_chat(url: str, content: str, max_tokens: int, timeout: float) -> Dict[str, Any]:
    """One streaming chat completion: time to the first content chunk, completion tokens (usage), wall time."""
    host, port, path = _split(url)
    body = json.dumps({"messages": [{"role": "user", "content": content}], "max_tokens": max_tokens,
                       "temperature": 0, "stream": True, "stream_options": {"include_usage": True}})
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    t0 = time.perf_counter()
    first: Optional[float] = None
    tokens: Optional[int] = None
    chunks = 0
    done = False
    try:
        conn.request("POST", path.rstrip("/") + "/chat/completions", body=body,
                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:300]!r}")
        for data in sse_events(resp):
            if data.strip() == "[DONE]":
                done = True
                break
            ev = json.loads(data)
            if "error" in ev:
                raise RuntimeError(f"error event: {ev['error']}")
            for ch in ev.get("choices") or []:
                if (ch.get("delta") or {}).get("content"):
                    chunks += 1
                    if first is None:
                        first = time.perf_counter()
            if ev.get("usage"):
                tokens = ev["usage"].get("completion_tokens")
    finally:
        conn.close()
    wall = time.perf_counter() - t0
    if not done:
        raise RuntimeError("the stream ended without [DONE]")
    return {"ttft_s": (first - t0) if first is not None else None, "tokens": tokens, "chunks": chunks,
            "wall_s": wall}


def http_load(base_url: str, clients: int, per_client: int, max_tokens: int, prompt: Any,
              timeout: float) -> Dict[str, Any]:
    """``clients`` threads, started together, each sending ``per_client`` streaming requests back to back;
    ``prompt(i)`` is the user message of request i."""
    lock = threading.Lock()
    results: List[Dict[str, Any]] = []
    errors: List[str] = []
    barrier = threading.Barrier(clients)
    counter = [0]

    def client() -> None:
        barrier.wait()
        for _ in range(per_client):
            with lock:
                counter[0] += 1
                i = counter[0]
            try:
                r = stream_chat(base_url, prompt(i), max_tokens, timeout)
            except Exception as exc:  # reported, not raised: a benchmark keeps going
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                continue
            with lock:
                results.append(r)

    threads = [threading.Thread(target=client, name=f"bench-client-{k}") for k in range(clients)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0
    return level_result(wall, [r.get("ttft_s") for r in results], [r.get("tokens") or 0 for r in results], errors)


def level_result(wall_s: float, ttfts: Sequence[Optional[float]], tokens: Sequence[int],
                 errors: Sequence[str] = ()) -> Dict[str, Any]:
    """One concurrency level of one system in one round: aggregate tokens/s and the TTFT quantiles."""
    total = sum(tokens)
    return {"wall_s": wall_s, "tokens": total, "requests": len(tokens),
            "tokens_per_s": (total / wall_s) if wall_s > 0 and total else None,
            "ttft_s": list(ttfts), "p50_ttft_ms": _ms(percentile(ttfts, 0.5)),
            "p95_ttft_ms": _ms(percentile(ttfts, 0.95)), "errors": list(errors)[:3], "error_count": len(errors)}


def _ms(x: Optional[float]) -> Optional[float]:
    return None if x is None else x * 1000.0


def summarise(rounds: List[Dict[str, Dict[str, Dict[str, Any]]]], levels: Sequence[int]) -> Dict[str, Any]:
    """Per system and level over all rounds: median aggregate tokens/s, p50/p95 TTFT over every request."""
    out: Dict[str, Any] = {}
    systems = sorted({s for r in rounds for s in r})
    for s in systems:
        per: Dict[str, Any] = {}
        for lv in [str(x) for x in levels] + ["sequential"]:
            cells = [r[s][lv] for r in rounds if lv in r.get(s, {})]
            if not cells:
                continue
            ttfts = [t for c in cells for t in c["ttft_s"]]
            per[lv] = {"tokens_per_s": median([c["tokens_per_s"] for c in cells]),
                       "p50_ttft_ms": _ms(percentile(ttfts, 0.5)), "p95_ttft_ms": _ms(percentile(ttfts, 0.95)),
                       "requests": sum(c["requests"] for c in cells), "rounds": len(cells),
                       "errors": sum(c["error_count"] for c in cells)}
        out[s] = per
    return out


def paired(rounds: List[Dict[str, Dict[str, Dict[str, Any]]]], top: int) -> Dict[str, Any]:
    """The target ratios, one value per round (both sides measured in the same round), as geometric means with
    their 95 % intervals."""
    lo, hi = "1", str(top)

    def per_round(fn: Any) -> List[float]:
        vals = []
        for r in rounds:
            try:
                v = fn(r)
            except (KeyError, TypeError, ZeroDivisionError):
                continue
            if v is not None and v > 0:
                vals.append(v)
        return vals

    def tps(r: Dict[str, Any], s: str, lv: str) -> float:
        return r[s][lv]["tokens_per_s"]

    def p(r: Dict[str, Any], s: str, lv: str, q: float) -> float:
        return percentile(r[s][lv]["ttft_s"], q)  # type: ignore[return-value]

    return {
        "server_scaling": ratio_stats(per_round(lambda r: tps(r, SERVER, hi) / tps(r, SERVER, lo))),
        "server_vs_genai_cb": ratio_stats(per_round(lambda r: tps(r, SERVER, hi) / tps(r, GENAI_CB, hi))),
        "server_ttft_growth": ratio_stats(per_round(lambda r: p(r, SERVER, hi, 0.95) / p(r, SERVER, lo, 0.5))),
        "genai_cb_scaling": ratio_stats(per_round(lambda r: tps(r, GENAI_CB, hi) / tps(r, GENAI_CB, lo))),
        "genai_cb_ttft_growth": ratio_stats(per_round(lambda r: p(r, GENAI_CB, hi, 0.95) / p(r, GENAI_CB, lo, 0.5))),
        "server_single_vs_sequential": ratio_stats(
            per_round(lambda r: tps(r, SERVER, lo) / tps(r, SEQUENTIAL, "sequential"))),
    }


def ratio_lines(sec: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The section's lines for the report's ratio list: each target ratio with its direction (at least / at most)."""
    pr = sec.get("paired") or {}
    top = sec.get("top_level")
    mode = (sec.get("server_scheduling") or {}).get("mode")
    spec = [("server_scaling", f"serve: server tok/s at {top} clients / at 1 client (server mode: {mode})",
             TARGETS["scaling"], True),
            ("server_vs_genai_cb", f"serve: server tok/s / GenAI ContinuousBatchingPipeline tok/s, {top} clients",
             TARGETS["vs_genai_cb"], True),
            ("server_ttft_growth", f"serve: server p95 TTFT at {top} clients / median TTFT at 1 client",
             TARGETS["ttft_growth"], False),
            ("genai_cb_scaling", f"serve: GenAI CB tok/s at {top} clients / at 1 client", None, True),
            ("genai_cb_ttft_growth", f"serve: GenAI CB p95 TTFT at {top} clients / median TTFT at 1 client", None,
             False),
            ("server_single_vs_sequential", "serve: server tok/s at 1 client / ovgenai_c in-process one at a time",
             None, True)]
    lines = []
    for key, what, target, at_least in spec:
        st = pr.get(key)
        value = st["geomean"] if st else None
        ci = st.get("ci95") if st else None
        status = None
        if value is not None and target is not None:
            ok = value >= target if at_least else value <= target
            status = "ok" if ok else "over" if not at_least else "under"
            if not ok and ci and (ci[1] >= target if at_least else ci[0] <= target):
                status += ", within noise"
        if st:
            what += f" [geomean of {st['n']} paired rounds]"
        lines.append({"what": what, "value": value, "target": target, "unit": "x", "status": status,
                      "ci95": list(ci) if ci else None, "at_least": at_least})
    return lines
