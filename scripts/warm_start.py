"""Warm-start benchmark of the command line: wall time from starting ``ovgenai-c generate`` to its first
answer byte on stdout, and to its exit — cold (no compiled-model blob yet), warm (the blob from the run
before), without the cache (``--no-cache``), and through a running ``ovgenai-c serve`` of the same model
(started here on a free loopback port; ``--server URL``). A benchmark, not a test: it prints figures, asserts
nothing.

    python3 scripts/warm_start.py [--model PATH] [--runs 3] [--prompt TEXT] [-n 8] [--json] [--quick]

``--quick`` measures only the warm in-process runs and the server runs.

Each run is a fresh process (`python -m ovgenai_c generate PROMPT -n N`, greedy). The cold runs use an empty
compiled-model cache (OVGENAI_C_COMPILED_CACHE pointed at a new temporary folder each time); the warm runs
share one folder that the first (unmeasured) run fills. Also reported: ``python -X importtime`` of the CLI.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]


def one_run(cmd: List[str], env: Dict[str, str]) -> Dict[str, float]:
    """Seconds from spawn to the first stdout byte and to exit; the stats line's load/TTFT when printed."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(ROOT))
    first: Optional[float] = None
    out = b""
    assert proc.stdout is not None
    while True:
        r, _, _ = select.select([proc.stdout], [], [], 0.5)
        if r:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            if first is None:
                first = time.perf_counter() - t0
            out += chunk
        elif proc.poll() is not None:
            break
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    code = proc.wait()
    total = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"run failed (exit {code}): {' '.join(cmd)}\n{err}")
    row = {"first_byte_s": first if first is not None else total, "total_s": total}
    m = re.search(r"(?:load ([0-9.]+) s|server \S+), .*TTFT ([0-9.]+) ms", err)
    if m:
        if m.group(1):
            row["load_s"] = float(m.group(1))
        row["ttft_s"] = float(m.group(2)) / 1000.0
    return row


def summarise(rows: List[Dict[str, float]]) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for key in rows[0]:
        vals = [r[key] for r in rows if key in r]
        out[key] = statistics.median(vals)
    return out


def import_time() -> float:
    """Seconds of `python -X importtime -m ovgenai_c.cli --help` imports (the cumulative top-level total)."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "ovgenai_c.cli", "--help"], capture_output=True,
                       text=True, cwd=str(ROOT))
    total = 0
    for line in r.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and not parts[2].startswith("  ") and parts[1].strip().isdigit():
            total += int(parts[1])
    return total / 1e6


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_runs(model: Optional[str], cmd: List[str], env: Dict[str, str], runs: int) -> List[Dict[str, float]]:
    """Start ``ovgenai-c serve`` (the model loaded before it listens), then time ``cmd --server URL`` runs."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    serve = subprocess.Popen([sys.executable, "-m", "ovgenai_c", "serve"] + ([model] if model else []) +
                             ["--port", str(port)], env=env, cwd=str(ROOT), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        for _ in range(3000):
            if serve.poll() is not None:
                raise SystemExit(f"ovgenai-c serve exited ({serve.returncode})")
            try:
                urllib.request.urlopen(url + "/ovgenai_c/info", timeout=5).read()
                break
            except OSError:
                time.sleep(0.1)
        one_run(cmd + ["--server", url], env)  # the server's first request (its own warm-up)
        return [one_run(cmd + ["--server", url], env) for _ in range(runs)]
    finally:
        serve.send_signal(signal.SIGINT)
        try:
            serve.wait(60)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="model path (default: the default model)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prompt", default="What is the capital of France?")
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="only the warm in-process and the server runs")
    a = ap.parse_args(argv)
    base = [sys.executable, "-m", "ovgenai_c", "generate"] + ([a.model] if a.model else []) + \
        [a.prompt, "-n", str(a.n), "--temperature", "0", "-v"]
    local = base + ["--no-server"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    results: Dict[str, Dict[str, float]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="ovgenai_c-warm-start-"))
    try:
        if not a.quick:
            cold = []
            for i in range(a.runs):
                d = tmp / f"cold{i}"
                cold.append(one_run(local, dict(env, OVGENAI_C_COMPILED_CACHE=str(d))))
                shutil.rmtree(d, ignore_errors=True)
            results["cold (empty cache)"] = summarise(cold)
        warm_env = dict(env, OVGENAI_C_COMPILED_CACHE=str(tmp / "warm"))
        one_run(local, warm_env)  # fills the cache
        results["warm (cached blob)"] = summarise([one_run(local, warm_env) for _ in range(a.runs)])
        if not a.quick:
            results["--no-cache"] = summarise([one_run(local + ["--no-cache"], env) for _ in range(a.runs)])
        results["running server"] = summarise(server_runs(a.model, base, warm_env, a.runs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    imports = import_time()
    if a.json:
        print(json.dumps({"runs": a.runs, "cli_import_s": imports, "results": results}, indent=2))
        return 0
    print(f"ovgenai-c generate, {a.n} new tokens, median of {a.runs} runs (CPU count {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f})")
    print(f"{'':<20} {'first byte':>11} {'exit':>8} {'load':>8} {'TTFT':>8}")
    for name, r in results.items():
        print(f"{name:<20} {r['first_byte_s']:>9.2f} s {r['total_s']:>6.2f} s "
              f"{r.get('load_s', float('nan')):>6.2f} s {r.get('ttft_s', float('nan')):>6.2f} s")
    print(f"CLI imports (python -X importtime -m ovgenai_c.cli --help): {imports * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
