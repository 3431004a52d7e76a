"""The worker-process protocol. Each engine lives in its own process, loaded once; the parent sends it one
request at a time as a JSON line on stdin and reads one JSON line back (``{"ok": true, ...}`` or
``{"ok": false, "error": ...}``). The first line a worker sends is its hello (load times, versions, RSS); the
``quit`` request closes the engine and gets a last RSS reading back. Anything the engine prints goes to the
worker's log file (stderr), never into the protocol."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict

from .engines import ENGINES, rss

# How the parent starts a worker: the package comes from PYTHONPATH (environment.worker_env), never from the
# current folder (``-c`` would put it first on sys.path).
WORKER_BOOT = ("import sys; del sys.path[0]; from ovgenai_c_tools.bench.worker import worker_main; "
               "sys.exit(worker_main(sys.argv[1]))")


def worker_main(spec_json: str) -> int:
    """The child side: load the engine ``spec_json`` describes, then serve requests until ``quit`` or EOF."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything the engine prints goes to stderr, the protocol keeps its own copy of stdout
    sys.stdout = sys.stderr

    def send(obj: Dict[str, Any]) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    spec = json.loads(spec_json)
    try:
        engine = ENGINES[spec["engine"]](spec)
    except BaseException as exc:
        import traceback

        traceback.print_exc()
        send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return 1
    send({"ok": True, **engine.hello()})
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.get("op")
        if op == "quit":
            break
        try:
            if op == "rss":
                out = rss()
            else:
                out = getattr(engine, op)(req)
            send({"ok": True, **out})
        except BaseException as exc:  # report and keep serving
            import traceback

            traceback.print_exc()
            send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
    try:
        engine.close()  # type: ignore[attr-defined]
    except Exception:
        pass
    send({"ok": True, "bye": True, **rss()})
    return 0


class WorkerError(RuntimeError):
    """A worker did not start, did not answer in time, exited, or reported a failed request."""


class Worker:
    """A worker process serving one engine; one request at a time."""

    def __init__(self, name: str, spec: Dict[str, Any], env: Dict[str, str], logdir: Path, timeout: float) -> None:
        self.name = name
        self.spec = spec
        self.timeout = timeout
        self.log = logdir / (name.replace("[", "_").replace("]", "") + f".{os.getpid()}.{id(self)}.log")
        self._logf = open(self.log, "wb")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER_BOOT, json.dumps(spec)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._logf, env=env,
                                     text=True, bufsize=1)
        self.hello = self._read(timeout)
        self.spawn_to_ready_s = time.perf_counter() - t0
        if not self.hello.get("ok"):
            self.kill()
            raise WorkerError(f"{name}: {self.hello.get('error')}{self._tail()}")

    def _tail(self) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()[-6:]
            return ("\n    " + "\n    ".join(text)) if text else ""
        except OSError:
            return ""

    def _read(self, timeout: float) -> Dict[str, Any]:
        assert self.proc.stdout is not None
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            self.kill()
            raise WorkerError(f"{self.name}: no answer within {timeout:.0f} s{self._tail()}")
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise WorkerError(f"{self.name}: worker exited ({code}){self._tail()}")
        return json.loads(line)

    def call(self, op: str, **req: Any) -> Dict[str, Any]:
        if self.proc.poll() is not None:
            raise WorkerError(f"{self.name}: worker is not running")
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **req}) + "\n")
        self.proc.stdin.flush()
        out = self._read(self.timeout)
        if not out.get("ok"):
            raise WorkerError(f"{self.name}: {op} failed: {out.get('error')}")
        return out

    def quit(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        try:
            if self.proc.poll() is None and self.proc.stdin is not None:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
                out = self._read(60)
                self.proc.wait(30)
        except Exception:
            self.kill()
        finally:
            self._logf.close()
        return out

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

