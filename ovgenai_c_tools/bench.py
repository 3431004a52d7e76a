"""Side-by-side benchmarks: binding overhead, backend parity, streaming cost, import footprint, the memory-bandwidth
limit and concurrency — in one run, one process tree, with interleaved repetitions.

    python scripts/bench.py [--model DIR] [--out FILE] [--quick]
    ovgenai-c bench --compare [...]          (the CLI calls ovgenai_c_tools.bench.main(argv))

Each engine lives in its own worker process (this file run with ``--worker``), loaded once, and the parent sends
it one request at a time over a pipe; repetitions rotate over the engines so machine drift hits them all alike.
Engines:
  ovgenai_c[bundled]   ovgenai_c over the bundled backend (libovgenai_c_bundled.so, our engine over OpenVINO core)
  ovgenai_c[official]  ovgenai_c over libopenvino_genai_c.so, when one is discoverable (pure binding cost)
  genai[PA]            openvino_genai pybind, default configuration (PagedAttention / continuous batching on CPU)
  genai[SDPA]          openvino_genai pybind with ATTENTION_BACKEND="SDPA" (stateful model)
  double               ovgenai_c over the C ABI test double (engine time ~0: isolates the binding's streaming cost)

Only the standard library is imported at module level; ``openvino_genai`` is imported only inside its worker
processes (never by ovgenai_c itself), ``numpy`` only for the bandwidth measurement. Benchmarks are not tests:
nothing here asserts a timing; the exit status is 0 whenever the run completes.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

PKG_DIR = Path(__file__).resolve().parent
PKG_PARENT = PKG_DIR.parent
SOURCE_ROOT = PKG_PARENT if (PKG_PARENT / "tests" / "abi_double" / "build.py").is_file() else None

SECTIONS = ("meta", "binding_overhead", "backend_parity", "greedy_agreement", "streaming_cost", "import_footprint",
            "physical_limit", "concurrency", "ratios")
TARGETS = {"tpot_ratio": 1.00, "ttft_ratio": 1.05, "stream_us_per_token": 20.0, "import_s": 0.05}

ENGINE_SECTIONS = ("binding_overhead", "backend_parity", "greedy_agreement", "streaming_cost", "concurrency")
GENAI_PA = "genai[PA]"
GENAI_SDPA = "genai[SDPA]"

STANDARD_PROMPT = "What is the capital of France?"
AGREEMENT_PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain what a hash table is in two sentences.",
    "List three uses of copper.",
    "Why is the sky blue?",
    "Give me a short recipe for pancakes.",
    "What is 17 times 23?",
    "Translate 'good morning' into Spanish and German.",
    "Describe the water cycle briefly.",
    "Name four planets of the solar system.",
    "What does a compiler do?",
    "Suggest a name for a black cat.",
]
# Filler for long prompts (written for this benchmark; plain ASCII English so every vocabulary covers it).
FILLER = (
    "The old lighthouse keeper climbed the spiral stairs every evening at dusk, counting the one hundred and "
    "twelve steps as his father had done before him. From the lamp room he could see the harbour, the fishing "
    "boats returning with their nets, and the long road that wound along the cliffs toward the market town. "
    "In winter the storms came from the north, and the waves broke so high against the rocks that the spray "
    "reached the windows of the cottage below. He kept a logbook of every ship that passed, noting its name, "
    "its flag, the direction of the wind and the colour of the sky. Over forty years the book had grown into "
    "eleven volumes, and the children of the village sometimes asked to read the pages that described the "
    "great gale, when three ships sheltered in the bay for a week and the sailors played music in the tavern "
    "every night. Summer brought calmer water, tourists with cameras, and the smell of salt and fresh bread "
    "from the bakery near the pier. "
)


# ----------------------------------------------------------------------------------------------------------------
# small helpers (shared by parent and workers)
# ----------------------------------------------------------------------------------------------------------------
_nonce_lock = threading.Lock()
_nonce = [0]


NONCE_SAMPLE = "Request 00000: "


def prompt_for(req: Dict[str, Any]) -> str:
    """The prompt of a request; with ``fresh`` it starts with a per-request number (same token count each time) so
    no engine measures a warm prefix: GenAI's default backend caches prompt prefixes (in whole KV blocks), and a
    repeated prompt would otherwise be timed warm. Plain strings, never chat histories: a stateful pipeline refuses
    to switch input types between calls, and reuses the KV cache of a history's common prefix."""
    if not req.get("fresh"):
        return req["prompt"]
    with _nonce_lock:
        _nonce[0] += 1
        n = _nonce[0]
    return f"Request {n % 100000:05d}: {req['prompt']}"


def _proc_status_kb(field: str) -> Optional[int]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    if field == "VmHWM":
        try:
            import resource

            return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        except Exception:
            return None
    return None


def _rss() -> Dict[str, Optional[int]]:
    return {"rss_kb": _proc_status_kb("VmRSS"), "hwm_kb": _proc_status_kb("VmHWM")}


def _median(xs: Sequence[float]) -> Optional[float]:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _pct(xs: Sequence[float], q: float) -> Optional[float]:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


# two-sided 95 % Student t quantiles by degrees of freedom (1..30); 1.96 beyond
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def _paired(a_runs: Sequence[Dict[str, Any]], b_runs: Sequence[Dict[str, Any]], key: str) -> List[float]:
    """Per-repetition ratios a/b of ``key``: run i of each list was made in the same interleaved round, so the
    machine's drift between rounds cancels in the ratio."""
    out = []
    for a, b in zip(a_runs, b_runs):
        x, y = (a or {}).get(key), (b or {}).get(key)
        if x is not None and y is not None and x > 0 and y > 0:
            out.append(x / y)
    return out


def _ratio_stats(ratios: Sequence[float]) -> Optional[Dict[str, Any]]:
    """Geometric mean of paired ratios with its 95 % confidence interval (t on the logs) and the quartiles."""
    rs = [r for r in ratios if r and r > 0]
    if not rs:
        return None
    logs = [math.log(r) for r in rs]
    m = statistics.fmean(logs)
    out: Dict[str, Any] = {"n": len(rs), "geomean": math.exp(m), "median": statistics.median(rs),
                           "p25": _pct(rs, 0.25), "p75": _pct(rs, 0.75), "ci95": None}
    if len(rs) > 1:
        half = (_T95[len(rs) - 2] if len(rs) - 1 <= len(_T95) else 1.96) * statistics.stdev(logs) / math.sqrt(len(rs))
        out["ci95"] = [math.exp(m - half), math.exp(m + half)]
    return out


def _loadavg() -> Optional[List[float]]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def _fmt(x: Any, nd: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


# ----------------------------------------------------------------------------------------------------------------
# worker side
# ----------------------------------------------------------------------------------------------------------------
class _Engine:
    """One engine inside a worker process."""

    kind = "?"

    def __init__(self, spec: Dict[str, Any]) -> None:
        self.spec = spec
        self.base = _rss()
        self.info: Dict[str, Any] = {}

    def hello(self) -> Dict[str, Any]:
        return {"base": self.base, **_rss(), **self.info}


class _OvgenaiEngine(_Engine):
    def __init__(self, spec: Dict[str, Any]) -> None:
        super().__init__(spec)
        import asyncio

        t0 = time.perf_counter()
        import ovgenai_c
        from ovgenai_c import _loader

        t1 = time.perf_counter()
        self.ov = ovgenai_c
        lib_path = spec.get("library")
        self.lib = _loader.open_library(lib_path) if lib_path else _loader.get_library()
        t2 = time.perf_counter()
        self.props = dict(spec.get("properties") or {})
        self.pipe = ovgenai_c.LLMPipeline(spec["model"], spec.get("device", "CPU"), library=self.lib, **self.props)
        t3 = time.perf_counter()
        self.extra: List[Any] = []
        self.loop = asyncio.new_event_loop()
        self.info = {"import_s": t1 - t0, "library_open_s": t2 - t1, "load_s": t3 - t2, "library": self.lib.path,
                     "library_kind": self.lib.kind, "versions": dict(self.lib.versions)}

    def _generate(self, pipe: Any, prompt: Any, kw: Dict[str, Any], mode: str) -> Dict[str, Any]:
        first: List[float] = []
        chunks = [0]
        res = None
        t0 = time.perf_counter()
        if mode == "none":
            res = pipe.generate(prompt, **kw)
        elif mode == "callback":
            def cb(_t: str) -> None:
                if not first:
                    first.append(time.perf_counter())
                chunks[0] += 1

            res = pipe.generate(prompt, streamer=cb, **kw)
        elif mode == "iter":
            it = pipe.stream(prompt, **kw)
            for _piece in it:
                if not first:
                    first.append(time.perf_counter())
                chunks[0] += 1
            res = it.result
        elif mode == "async":
            async def consume() -> None:
                async for _piece in pipe.astream(prompt, **kw):
                    if not first:
                        first.append(time.perf_counter())
                    chunks[0] += 1

            self.loop.run_until_complete(consume())
        else:
            raise ValueError(f"unknown stream mode {mode!r}")
        t1 = time.perf_counter()
        out: Dict[str, Any] = {"wall_s": t1 - t0, "first_s": (first[0] - t0) if first else None, "chunks": chunks[0]}
        if res is not None:
            pm = res.perf_metrics
            out.update(text=res.texts[0] if res.texts else str(res), n_in=pm.get_num_input_tokens(),
                       n_out=pm.get_num_generated_tokens(), ttft_ms=pm.get_ttft().mean, tpot_ms=pm.get_tpot().mean,
                       throughput=pm.get_throughput().mean, engine_load_ms=pm.get_load_time(),
                       generate_ms=pm.get_generate_duration().mean)
        return out

    def gen(self, req: Dict[str, Any]) -> Dict[str, Any]:
        kw: Dict[str, Any] = {"max_new_tokens": int(req["max_new_tokens"])}
        if req.get("ignore_eos"):
            kw["ignore_eos"] = True
        return self._generate(self.pipe, prompt_for(req), kw, req.get("stream", "none"))

    def concurrency(self, req: Dict[str, Any]) -> Dict[str, Any]:
        n = int(req["threads"])
        per = int(req["requests"])
        if req["mode"] == "separate":
            while len(self.extra) < n - 1:
                self.extra.append(self.ov.LLMPipeline(self.spec["model"], self.spec.get("device", "CPU"),
                                                      library=self.lib, **self.props))
            pipes = [self.pipe] + self.extra[:n - 1]
        else:
            pipes = [self.pipe] * n
        kw = {"max_new_tokens": int(req["max_new_tokens"]), "ignore_eos": True}
        lat: List[float] = []
        tokens = [0]
        errors: List[str] = []
        lock = threading.Lock()
        barrier = threading.Barrier(n)

        def run(i: int) -> None:
            barrier.wait()
            for _ in range(per):
                t = time.perf_counter()
                try:
                    r = pipes[i].generate(prompt_for(req), **kw)
                except Exception as exc:  # reported, not raised: a benchmark keeps going
                    with lock:
                        errors.append(repr(exc))
                    continue
                dt = time.perf_counter() - t
                with lock:
                    lat.append(dt)
                    tokens[0] += r.perf_metrics.get_num_generated_tokens()

        ths = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        t0 = time.perf_counter()
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        wall = time.perf_counter() - t0
        return {"wall_s": wall, "latencies_s": lat, "tokens": tokens[0], "errors": errors, **_rss()}

    def close(self) -> None:
        for p in self.extra:
            p.close()
        self.pipe.close()


class _GenaiEngine(_Engine):
    def __init__(self, spec: Dict[str, Any]) -> None:
        super().__init__(spec)
        t0 = time.perf_counter()
        import openvino_genai

        t1 = time.perf_counter()
        self.g = openvino_genai
        props = dict(spec.get("properties") or {})
        self.pipe = openvino_genai.LLMPipeline(spec["model"], spec.get("device", "CPU"), **props)
        t2 = time.perf_counter()
        self.info = {"import_s": t1 - t0, "load_s": t2 - t1, "versions": {"openvino_genai": openvino_genai.__version__}}

    def gen(self, req: Dict[str, Any]) -> Dict[str, Any]:
        cfg = self.g.GenerationConfig()
        cfg.max_new_tokens = int(req["max_new_tokens"])
        if req.get("ignore_eos"):
            cfg.ignore_eos = True
        eos = self.pipe.get_tokenizer().get_eos_token_id()
        if eos is not None and eos >= 0:
            cfg.eos_token_id = eos
        mode = req.get("stream", "none")
        first: List[float] = []
        chunks = [0]

        def cb(_t: str) -> bool:
            if not first:
                first.append(time.perf_counter())
            chunks[0] += 1
            return False

        inputs = [prompt_for(req)]
        t0 = time.perf_counter()
        if mode == "none":
            res = self.pipe.generate(inputs, cfg)
        elif mode == "callback":
            res = self.pipe.generate(inputs, cfg, cb)
        else:
            raise ValueError(f"stream mode {mode!r} is not available for openvino_genai")
        t1 = time.perf_counter()
        pm = res.perf_metrics
        return {"wall_s": t1 - t0, "first_s": (first[0] - t0) if first else None, "chunks": chunks[0],
                "text": res.texts[0], "n_in": pm.get_num_input_tokens(), "n_out": pm.get_num_generated_tokens(),
                "ttft_ms": pm.get_ttft().mean, "tpot_ms": pm.get_tpot().mean, "throughput": pm.get_throughput().mean,
                "engine_load_ms": pm.get_load_time(), "generate_ms": pm.get_generate_duration().mean}

    def make_prompt(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """A user message whose chat-templated form is ``target`` tokens long (as GenAI counts them)."""
        tok = self.pipe.get_tokenizer()
        target = int(req["target"])

        def ids(text: str) -> List[int]:
            return [int(x) for x in tok.encode(text, add_special_tokens=False).input_ids.data[0]]

        def n_in(text: str) -> int:
            try:
                content = (NONCE_SAMPLE + text) if req.get("fresh") else text
                templ = tok.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True)
            except Exception:
                templ = text
            return len(ids(templ))

        body = FILLER * (target // 60 + 2)
        body_ids = ids(body)
        k = max(1, target - n_in("x") + 1)
        text = ""
        for _ in range(8):
            k = max(1, min(k, len(body_ids)))
            text = tok.decode(body_ids[:k]).strip()
            n = n_in(text)
            if n == target:
                break
            k += target - n
        return {"text": text, "n_tokens": n_in(text)}

    def close(self) -> None:
        del self.pipe


class _DoubleEngine(_Engine):
    """ovgenai_c over the ABI double: the binding's own per-token streaming cost (engine time ~0)."""

    def __init__(self, spec: Dict[str, Any]) -> None:
        super().__init__(spec)
        import asyncio

        import cffi

        import ovgenai_c
        from ovgenai_c import _loader
        from ovgenai_c.pipeline import IR_FILES

        so = spec["library"]
        self.lib = _loader.open_library(so)
        self.cffi = cffi.FFI()
        self.cffi.cdef(Path(spec["controls_h"]).read_text())
        self.ctl = self.cffi.dlopen(so)
        model = Path(spec["model"])
        model.mkdir(parents=True, exist_ok=True)
        for name in IR_FILES:
            (model / name).touch()
        self.pipe = ovgenai_c.LLMPipeline(str(model), "CPU", library=self.lib)
        self.loop = asyncio.new_event_loop()
        self.ov = ovgenai_c

    def stream_cost(self, req: Dict[str, Any]) -> Dict[str, Any]:
        ntok, reps = int(req["tokens"]), int(req["reps"])
        word = "tok "
        self.ctl.ovd_reset()
        self.ctl.ovd_set_reply((word * ntok).encode())
        lib, ffi = self.lib.lib, self.lib.ffi
        handle = self.pipe._state.handle  # the raw handle: C calls below run on this (the main) thread while the
        # owner thread is idle; the double itself checks for concurrent use of a pipeline.
        cfgp = ffi.new("ov_genai_generation_config**")
        self.lib.check(lib.ov_genai_generation_config_create(cfgp), "create")
        cfg = cfgp[0]
        self.lib.check(lib.ov_genai_generation_config_set_max_new_tokens(cfg, ntok + 8), "set_max_new_tokens")
        prompt = b"bench"

        @ffi.callback("ov_genai_streaming_status_e(*)(const char*, void*)")
        def trivial(_s: Any, _a: Any) -> int:
            return 0

        streamer = ffi.new("streamer_callback*")
        streamer.callback_func = trivial
        streamer.args = ffi.NULL

        def c_call(with_cb: bool) -> float:
            out = ffi.new("ov_genai_decoded_results**")
            t = time.perf_counter()
            st = lib.ov_genai_llm_pipeline_generate(handle, prompt, cfg, streamer if with_cb else ffi.NULL, out)
            dt = time.perf_counter() - t
            if st != 0:
                raise RuntimeError(f"double generate failed: {st}")
            lib.ov_genai_decoded_results_free(out[0])
            return dt

        def py_mode(mode: str) -> float:
            kw = {"max_new_tokens": ntok + 8}
            t = time.perf_counter()
            if mode == "generate":
                self.pipe.generate("bench", **kw)
            elif mode == "callback":
                self.pipe.generate("bench", streamer=lambda _t: None, **kw)
            elif mode == "iter":
                for _ in self.pipe.stream("bench", **kw):
                    pass
            elif mode == "async":
                async def consume() -> None:
                    async for _ in self.pipe.astream("bench", **kw):
                        pass

                self.loop.run_until_complete(consume())
            return time.perf_counter() - t

        modes = ["c_no_streamer", "c_trivial_callback", "generate", "callback", "iter", "async"]
        times: Dict[str, List[float]] = {m: [] for m in modes}
        # check the token count once
        r = self.pipe.generate("bench", max_new_tokens=ntok + 8)
        n = r.perf_metrics.get_num_generated_tokens() or ntok
        for rep in range(reps + 1):
            order = modes[rep % len(modes):] + modes[:rep % len(modes)]
            for m in order:
                if m == "c_no_streamer":
                    dt = c_call(False)
                elif m == "c_trivial_callback":
                    dt = c_call(True)
                else:
                    dt = py_mode(m)
                if rep > 0:  # rep 0 warms up
                    times[m].append(dt)
        # the fixed cost of one call (1 token): the C call alone vs ovgenai_c's generate() (argument checks, config
        # materialisation, owner-thread hand-off, results and perf metrics read back)
        self.lib.check(lib.ov_genai_generation_config_set_max_new_tokens(cfg, 1), "set_max_new_tokens")
        calls = int(req.get("calls", 200))
        per_call: Dict[str, List[float]] = {"c_call": [], "generate": [], "generate_with_streamer": []}
        for rep in range(4):
            for m in _rotate(list(per_call), rep):
                t = time.perf_counter()
                for _ in range(calls):
                    if m == "c_call":
                        out = ffi.new("ov_genai_decoded_results**")
                        lib.ov_genai_llm_pipeline_generate(handle, prompt, cfg, ffi.NULL, out)
                        lib.ov_genai_decoded_results_free(out[0])
                    elif m == "generate":
                        self.pipe.generate("bench", max_new_tokens=1)
                    else:
                        self.pipe.generate("bench", streamer=lambda _t: None, max_new_tokens=1)
                if rep > 0:
                    per_call[m].append((time.perf_counter() - t) / calls)
        lib.ov_genai_generation_config_free(cfg)
        return {"tokens": n, "times_s": times, "per_call_s": per_call, "calls": calls}

    def close(self) -> None:
        self.pipe.close()


_ENGINES = {"ovgenai_c": _OvgenaiEngine, "genai": _GenaiEngine, "double": _DoubleEngine}


def _worker_main(spec_json: str) -> int:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything the engine prints goes to stderr, the protocol keeps its own copy of stdout
    sys.stdout = sys.stderr

    def send(obj: Dict[str, Any]) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    spec = json.loads(spec_json)
    try:
        engine = _ENGINES[spec["engine"]](spec)
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
                out = _rss()
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
    send({"ok": True, "bye": True, **_rss()})
    return 0


# ----------------------------------------------------------------------------------------------------------------
# parent side
# ----------------------------------------------------------------------------------------------------------------
class WorkerError(RuntimeError):
    pass


class Worker:
    """A worker process serving one engine; one request at a time."""

    def __init__(self, name: str, spec: Dict[str, Any], env: Dict[str, str], logdir: Path, timeout: float) -> None:
        self.name = name
        self.spec = spec
        self.timeout = timeout
        self.log = logdir / (name.replace("[", "_").replace("]", "") + f".{os.getpid()}.{id(self)}.log")
        self._logf = open(self.log, "wb")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
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


def _say(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _worker_env(oracle_dir: Optional[Path]) -> Dict[str, str]:
    env = dict(os.environ)
    paths = [str(PKG_PARENT)]
    if oracle_dir is not None:
        paths.insert(0, str(oracle_dir))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ovgenai_c" / "bench"


def ensure_oracle(allow_fetch: bool) -> Tuple[Optional[Path], Optional[str]]:
    """Make ``openvino_genai`` importable for the comparison workers.

    Returns (extra sys.path folder or None, reason it is unavailable or None). When it is not installed, it is
    fetched once with pip (same version as the installed ``openvino``, no dependencies) into a private folder
    of the cache, never into the environment.
    """
    env = _worker_env(None)
    probe = subprocess.run([sys.executable, "-c", "import openvino_genai"], env=env, capture_output=True, text=True)
    if probe.returncode == 0:
        return None, None
    target = _cache_dir() / "oracle"
    env2 = _worker_env(target)
    if target.is_dir():
        probe = subprocess.run([sys.executable, "-c", "import openvino_genai"], env=env2, capture_output=True, text=True)
        if probe.returncode == 0:
            return target, None
    if not allow_fetch:
        return None, "openvino_genai is not importable (and --no-fetch was given)"
    try:
        from importlib.metadata import version

        ov_version = version("openvino")
    except Exception:
        return None, "openvino_genai is not importable and the openvino version is unknown"
    genai_version = ov_version if ov_version.count(".") >= 3 else ov_version + ".0"
    _say(f"fetching the comparison engine openvino-genai=={genai_version} into {target}")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                           f"openvino-genai=={genai_version}"], capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"openvino_genai is not importable and pip could not fetch it: {proc.stderr.strip()[-300:]}"
    probe = subprocess.run([sys.executable, "-c", "import openvino_genai"], env=env2, capture_output=True, text=True)
    if probe.returncode != 0:
        return None, f"fetched openvino-genai does not import: {probe.stderr.strip()[-300:]}"
    return target, None


def find_libraries(explicit: Optional[str]) -> List[Tuple[str, str]]:
    """(engine label, library path) of the GenAI C libraries ovgenai_c can use here (paths only; nothing loaded)."""
    if explicit:
        p = Path(explicit)
        label = "ovgenai_c[official]" if p.name.startswith("libopenvino_genai_c") else "ovgenai_c[bundled]"
        return [(label, str(p.resolve()))]
    sys.path.insert(0, str(PKG_PARENT)) if str(PKG_PARENT) not in sys.path else None
    from ovgenai_c import _loader

    out: List[Tuple[str, str]] = []
    for source, path in _loader.candidates():
        if not path.is_file():
            continue
        if source == "bundled backend":
            if not any(lbl == "ovgenai_c[bundled]" for lbl, _ in out):
                out.append(("ovgenai_c[bundled]", str(path.resolve())))
        elif not any(lbl == "ovgenai_c[official]" for lbl, _ in out):
            out.append(("ovgenai_c[official]", str(path.resolve())))
    out.sort(key=lambda x: 0 if x[0].endswith("[bundled]") else 1)
    return out


def default_model() -> Path:
    smol = Path("/tmp/smol")
    if (smol / "openvino_model.xml").is_file() and (smol / "openvino_tokenizer.xml").is_file():
        return smol
    sys.path.insert(0, str(PKG_PARENT)) if str(PKG_PARENT) not in sys.path else None
    from ovgenai_c import models

    return Path(models.ensure_default_model("ir"))


# --- physical limit ------------------------------------------------------------------------------------------------
def measure_bandwidth(mbytes: int, reps: int, threads: int) -> Dict[str, Any]:
    """Memory read bandwidth (GB/s): numpy sum over a float64 array, best of ``reps``; one thread and ``threads``."""
    import numpy as np

    n = mbytes * 1024 * 1024 // 8
    a = np.ones(n, dtype=np.float64)
    a.sum()  # fault the pages in
    nbytes = a.nbytes
    best1 = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a.sum()
        best1 = min(best1, time.perf_counter() - t)
    res: Dict[str, Any] = {"array_bytes": nbytes, "reps": reps, "single_thread_gbps": nbytes / best1 / 1e9}
    if threads > 1:
        parts = np.array_split(a, threads)
        bestn = float("inf")
        for _ in range(reps):
            ths = [threading.Thread(target=p.sum) for p in parts]
            t = time.perf_counter()
            for th in ths:
                th.start()
            for th in ths:
                th.join()
            bestn = min(bestn, time.perf_counter() - t)
        res[f"{threads}_threads_gbps"] = nbytes / bestn / 1e9
    res["gbps"] = max(v for k, v in res.items() if k.endswith("_gbps"))
    del a
    return res


# --- import footprint ----------------------------------------------------------------------------------------------
_IMPORT_PROBE = r"""
import json, sys, time
def kb(f):
    for line in open('/proc/self/status'):
        if line.startswith(f + ':'):
            return int(line.split()[1])
r0 = kb('VmRSS')
t = time.perf_counter()
mod = sys.argv[1]
if mod != '-':
    __import__(mod)
dt = time.perf_counter() - t
out = {'import_s': dt, 'rss_before_kb': r0, 'rss_kb': kb('VmRSS'), 'hwm_kb': kb('VmHWM')}
if len(sys.argv) > 2 and sys.argv[2] == 'load':
    t = time.perf_counter()
    try:
        sys.modules[mod].load_library()
        out['first_use_load_s'] = time.perf_counter() - t
        out['rss_after_load_kb'] = kb('VmRSS')
    except Exception as exc:
        out['first_use_error'] = repr(exc)
print(json.dumps(out))
"""


def measure_imports(reps: int, env: Dict[str, str], with_genai: bool, load_lib: Optional[str],
                    stop: Any = lambda rep: False) -> Dict[str, Any]:
    mods = ["-", "ovgenai_c"] + (["openvino_genai"] if with_genai else [])
    samples: Dict[str, List[Dict[str, Any]]] = {m: [] for m in mods}
    walls: Dict[str, List[float]] = {m: [] for m in mods}
    for rep in range(reps):
        if stop(rep):
            reps = rep
            break
        order = mods[rep % len(mods):] + mods[:rep % len(mods)]
        for m in order:
            args = [sys.executable, "-c", _IMPORT_PROBE, m]
            e = dict(env)
            if m == "ovgenai_c" and load_lib:
                args.append("load")
                e["OVGENAI_C_LIBRARY"] = load_lib
            t = time.perf_counter()
            proc = subprocess.run(args, env=e, capture_output=True, text=True, timeout=300)
            wall = time.perf_counter() - t
            if proc.returncode != 0:
                samples[m].append({"error": proc.stderr.strip()[-300:]})
                continue
            samples[m].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            walls[m].append(wall)
    out: Dict[str, Any] = {"reps": reps, "modules": {}}
    base_rss = _median([s.get("rss_kb") for s in samples["-"] if "rss_kb" in s])
    base_wall = _median(walls["-"])
    for m in mods:
        ok = [s for s in samples[m] if "import_s" in s]
        if not ok:
            out["modules"][m] = {"error": samples[m][0].get("error") if samples[m] else "no sample"}
            continue
        entry = {
            "import_s": _median([s["import_s"] for s in ok]),
            "import_s_min": min(s["import_s"] for s in ok),
            "rss_kb": _median([s["rss_kb"] for s in ok]),
            "rss_delta_kb": (_median([s["rss_kb"] for s in ok]) or 0) - (base_rss or 0),
            "process_wall_s": _median(walls[m]),
            "process_wall_delta_s": (_median(walls[m]) or 0) - (base_wall or 0),
        }
        loads = [s["first_use_load_s"] for s in ok if "first_use_load_s" in s]
        if loads:
            entry["first_use_load_library_s"] = _median(loads)
            entry["rss_after_load_library_kb"] = _median([s["rss_after_load_kb"] for s in ok if "rss_after_load_kb" in s])
        errs = [s["first_use_error"] for s in ok if "first_use_error" in s]
        if errs:
            entry["first_use_error"] = errs[0]
        out["modules"][m if m != "-" else "(nothing)"] = entry
    return out


# --- the run -------------------------------------------------------------------------------------------------------
class Settings:
    def __init__(self, quick: bool, args: argparse.Namespace) -> None:
        self.quick = quick
        if quick:
            self.warmup, self.overhead_reps, self.overhead_out = 1, 2, 8
            self.prompt_lens, self.out_lens, self.parity_reps = [16, 64], [8], 1
            self.agree_prompts, self.agree_tokens = 2, 16
            self.double_tokens, self.double_reps = 2000, 2
            self.stream_out, self.stream_reps = 16, 1
            self.import_reps, self.load_reps = 1, 1
            self.conc_threads, self.conc_requests, self.conc_out, self.conc_reps = 2, 1, 8, 1
            self.bw_mb, self.bw_reps = 64, 3
        else:
            self.warmup, self.overhead_reps, self.overhead_out = 2, 12, 128
            self.prompt_lens, self.out_lens, self.parity_reps = [16, 256, 1024], [32, 128], 10
            self.agree_prompts, self.agree_tokens = 8, 64
            self.double_tokens, self.double_reps = 20000, 5
            self.stream_out, self.stream_reps = 64, 2
            self.import_reps, self.load_reps = 5, 2
            self.conc_threads, self.conc_requests, self.conc_out, self.conc_reps = 2, 3, 64, 2
            self.bw_mb, self.bw_reps = 512, 8
        if args.reps is not None:
            self.overhead_reps = self.parity_reps = self.stream_reps = self.double_reps = max(1, args.reps)
        if args.prompt_lens:
            self.prompt_lens = [int(x) for x in args.prompt_lens.split(",")]
        if args.out_lens:
            self.out_lens = [int(x) for x in args.out_lens.split(",")]
        if args.threads is not None:
            self.conc_threads = max(1, args.threads)

    def as_dict(self) -> Dict[str, Any]:
        return {k: v for k, v in vars(self).items()}


def _rotate(items: List[Any], k: int) -> List[Any]:
    if not items:
        return items
    k %= len(items)
    return items[k:] + items[:k]


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.s = Settings(args.quick, args)
        self.t_start = time.perf_counter()
        self.report: Dict[str, Any] = {k: {} for k in SECTIONS}
        self.workers: Dict[str, Worker] = {}
        self.engine_errors: Dict[str, str] = {}
        self.logdir = Path(tempfile.mkdtemp(prefix="ovgenai_c-bench-"))
        self.oracle_dir: Optional[Path] = None
        self.oracle_error: Optional[str] = None
        self.prompts: Dict[int, Dict[str, Any]] = {}
        self.crashes: Dict[str, List[str]] = {}
        self.trimmed: Dict[str, int] = {}

    # --- plumbing ---
    def env(self) -> Dict[str, str]:
        return _worker_env(self.oracle_dir)

    def start(self, name: str, spec: Dict[str, Any]) -> Optional[Worker]:
        try:
            w = Worker(name, spec, self.env(), self.logdir, self.args.timeout)
        except WorkerError as exc:
            self.engine_errors[name] = str(exc)
            _say(f"engine {name} unavailable: {exc}")
            return None
        self.workers[name] = w
        return w

    def call(self, name: str, op: str, **req: Any) -> Optional[Dict[str, Any]]:
        w = self.workers.get(name)
        if w is None:
            return None
        try:
            return w.call(op, **req)
        except WorkerError as exc:
            _say(str(exc))
            if w.proc.poll() is None:
                return None
            self.workers.pop(name, None)
            self.crashes.setdefault(name, []).append(f"{op}: {exc}")
            if len(self.crashes[name]) > 1 or name not in getattr(self, "specs", {}):
                self.engine_errors[name] = str(exc)
                return None
            _say(f"restarting {name} once")  # e.g. its library was rebuilt in place under it
            if self.start(name, self.specs[name]) is None:
                return None
            try:
                return self.workers[name].call(op, **req)
            except WorkerError as exc2:
                _say(str(exc2))
                return None

    def engines(self) -> List[str]:
        return [n for n in self.workers if n != "double"]

    def ov_engines(self) -> List[str]:
        return [n for n in self.engines() if n.startswith("ovgenai_c")]

    def genai_engines(self) -> List[str]:
        return [n for n in self.engines() if n.startswith("genai")]

    def snapshot(self, label: str, path: str) -> str:
        """Run a private copy of the bundled backend, so a rebuild that rewrites the file in place cannot crash
        the workers mid-run (the official library stays where it is: it needs its neighbours)."""
        if not label.endswith("[bundled]") or self.args.no_snapshot or not Path(path).is_file():
            return path
        import shutil

        d = self.logdir / "lib"
        d.mkdir(exist_ok=True)
        dst = d / Path(path).name
        shutil.copy2(path, dst)
        self.report["meta"].setdefault("library_snapshots", {})[label] = {"original": path, "copy": str(dst)}
        return str(dst)

    # cumulative share of the time budget by the end of each section
    BUDGET_SHARE = {"import": 0.10, "load": 0.20, "binding_overhead": 0.34, "backend_parity": 0.72,
                    "greedy_agreement": 0.80, "streaming_cost": 0.88, "concurrency": 0.95}

    def over_budget(self, section: str, rep: int) -> bool:
        """True when a section should stop repeating (it always gets its first repetition)."""
        budget = self.args.budget
        if rep < 1 or not budget or budget <= 0:
            return False
        elapsed = time.perf_counter() - self.t_start
        if elapsed > budget * self.BUDGET_SHARE[section]:
            self.trimmed.setdefault(section, rep)
            return True
        return False

    # --- sections ---
    def run(self) -> Dict[str, Any]:
        a = self.args
        model = Path(a.model) if a.model else default_model()
        self.model = model.resolve()
        if not a.no_genai:
            self.oracle_dir, self.oracle_error = ensure_oracle(not a.no_fetch)
        else:
            self.oracle_error = "--no-genai"
        self.libs = [(label, self.snapshot(label, path)) for label, path in find_libraries(a.library)]
        self.meta()
        _say(f"model {self.model}; engines: {[l for l, _ in self.libs] + ([] if self.oracle_error else [GENAI_PA, GENAI_SDPA])}")

        self.section("physical_limit", self.physical_limit_start)
        self.section("import_footprint", self.import_footprint)
        if not self.args.only or set(self.args.only) & set(ENGINE_SECTIONS):
            self.load_engines()
        else:
            self.load_samples, self.specs = {}, {}
        self.section("binding_overhead", self.binding_overhead)
        self.section("backend_parity", self.backend_parity)
        self.section("greedy_agreement", self.greedy_agreement)
        self.section("streaming_cost", self.streaming_cost)
        self.section("concurrency", self.concurrency)
        self.section("physical_limit", self.physical_limit_end)
        self.finish_workers()
        self.report["meta"]["engine_errors"] = self.engine_errors
        self.report["meta"]["worker_crashes"] = self.crashes
        self.report["meta"]["trimmed_by_budget"] = self.trimmed  # section -> repetitions actually run
        self.report["meta"]["elapsed_s"] = time.perf_counter() - self.t_start
        self.report["meta"]["load_average_end"] = _loadavg()
        self.ratios()
        return self.report

    def section(self, name: str, fn: Any) -> None:
        if self.args.only and name not in self.args.only:
            self.report[name] = {"skipped": "not selected (--only)"}
            return
        _say(f"{name} ({time.perf_counter() - self.t_start:.0f} s elapsed)")
        try:
            fn()
        except Exception as exc:  # a failing section is reported, the run goes on
            import traceback

            traceback.print_exc()
            self.report[name]["error"] = f"{type(exc).__name__}: {exc}"

    def meta(self) -> None:
        cpu = platform.processor()
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        mem = None
        try:
            for line in open("/proc/meminfo"):
                if line.startswith("MemTotal"):
                    mem = int(line.split()[1]) * 1024
        except OSError:
            pass
        versions = {}
        try:
            from importlib.metadata import version

            for d in ("openvino", "openvino-tokenizers", "openvino-genai", "cffi", "numpy"):
                try:
                    versions[d] = version(d)
                except Exception:
                    pass
        except ImportError:
            pass
        bin_path = self.model / "openvino_model.bin"
        self.report["meta"].update({
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "load_average_start": _loadavg(),
            "model": str(self.model), "model_bin_bytes": bin_path.stat().st_size if bin_path.is_file() else None,
            "device": a_device(self.args), "quick": self.s.quick, "settings": self.s.as_dict(),
            "machine": {"cpu": cpu, "cores": os.cpu_count(), "mem_bytes": mem, "python": platform.python_version(),
                        "platform": platform.platform()},
            "versions": versions,
            "ovgenai_c_libraries": [{"engine": l, "path": p} for l, p in self.libs],
            "oracle": {"available": self.oracle_error is None, "extra_path": str(self.oracle_dir) if self.oracle_dir
                       else None, "reason": self.oracle_error},
            "engines_described": {
                "ovgenai_c[bundled]": "ovgenai_c (cffi, C ABI) over the bundled backend libovgenai_c_bundled.so",
                "ovgenai_c[official]": "ovgenai_c (cffi, C ABI) over the official libopenvino_genai_c.so",
                GENAI_PA: "openvino_genai pybind, default properties (PagedAttention / continuous batching)",
                GENAI_SDPA: "openvino_genai pybind, ATTENTION_BACKEND=SDPA (stateful model)",
                "double": "ovgenai_c over the C ABI test double (engine time ~0)",
            },
        })

    def physical_limit_start(self) -> None:
        self._bw = [measure_bandwidth(self.s.bw_mb, self.s.bw_reps, max(1, min(os.cpu_count() or 1, 8)))]

    def physical_limit_end(self) -> None:
        bws = getattr(self, "_bw", [])
        bws.append(measure_bandwidth(self.s.bw_mb, self.s.bw_reps, max(1, min(os.cpu_count() or 1, 8))))
        gbps = max(b["gbps"] for b in bws)
        wbytes = self.report["meta"].get("model_bin_bytes")
        sec: Dict[str, Any] = {"bandwidth_runs": bws, "bandwidth_gbps": gbps, "weight_bytes": wbytes,
                               "note": "decode bound = bandwidth / weight bytes (every weight read once per token)"}
        if wbytes:
            bound_tps = gbps * 1e9 / wbytes
            sec["decode_bound_tokens_per_s"] = bound_tps
            sec["decode_bound_tpot_ms"] = 1000.0 / bound_tps
            fr: Dict[str, Any] = {}
            over = self.report.get("binding_overhead", {}).get("engines", {})
            for name, e in over.items():
                tpot = e.get("tpot_ms")
                if tpot:
                    fr[name] = {"tpot_ms": tpot, "tokens_per_s": 1000.0 / tpot,
                                "fraction_of_bound": (1000.0 / tpot) / bound_tps}
            sec["decode_fraction"] = fr
        self.report["physical_limit"] = sec

    def import_footprint(self) -> None:
        bundled = next((p for l, p in self.libs if l.endswith("[bundled]")), None)
        load_lib = self.libs[0][1] if self.libs else None
        self.report["import_footprint"] = measure_imports(self.s.import_reps, self.env(),
                                                          self.oracle_error is None, load_lib or bundled,
                                                          stop=lambda rep: self.over_budget("import", rep))

    def load_engines(self) -> None:
        dev = a_device(self.args)
        loads: Dict[str, List[Dict[str, Any]]] = {}
        specs: Dict[str, Dict[str, Any]] = {}
        for label, path in self.libs:
            specs[label] = {"engine": "ovgenai_c", "model": str(self.model), "device": dev, "library": path}
        if self.oracle_error is None:
            specs[GENAI_PA] = {"engine": "genai", "model": str(self.model), "device": dev}
            specs[GENAI_SDPA] = {"engine": "genai", "model": str(self.model), "device": dev,
                                 "properties": {"ATTENTION_BACKEND": "SDPA"}}
        if not specs:
            raise RuntimeError("no engine to benchmark")
        names = list(specs)
        for rep in range(self.s.load_reps):
            if self.over_budget("load", rep):
                break
            for name in _rotate(names, rep):
                if rep == 0:
                    w = self.start(name, specs[name])
                    if w is not None:
                        loads.setdefault(name, []).append({**w.hello, "spawn_to_ready_s": w.spawn_to_ready_s})
                elif name in self.workers:  # extra load samples in fresh processes
                    try:
                        w2 = Worker(name, specs[name], self.env(), self.logdir, self.args.timeout)
                        loads[name].append({**w2.hello, "spawn_to_ready_s": w2.spawn_to_ready_s})
                        w2.quit()
                    except WorkerError as exc:
                        _say(str(exc))
        self.load_samples = loads
        self.specs = specs

    def _gen_stats(self, runs: List[Dict[str, Any]]) -> Dict[str, Any]:
        ok = [r for r in runs if r]
        if not ok:
            return {"error": "no successful run"}
        st: Dict[str, Any] = {"runs": len(ok)}
        for k in ("ttft_ms", "tpot_ms", "throughput", "wall_s", "first_s", "n_in", "n_out", "generate_ms"):
            st[k] = _median([r.get(k) for r in ok])
        # what the call costs outside the engine's own generate timer (binding, marshalling, thread hand-off)
        outside = [r["wall_s"] * 1000.0 - r["generate_ms"] for r in ok if r.get("generate_ms") and r.get("wall_s")]
        st["outside_engine_ms"] = _median(outside)
        n_out = st.get("n_out") or 0
        if st.get("wall_s") and n_out:
            st["e2e_tokens_per_s"] = n_out / st["wall_s"]
            if st.get("first_s") is not None and n_out > 1:
                st["wall_tpot_ms"] = (st["wall_s"] - st["first_s"]) * 1000.0 / (n_out - 1)
        if st.get("first_s") is not None:
            st["wall_ttft_ms"] = st["first_s"] * 1000.0
        return st

    def binding_overhead(self) -> None:
        engines = self.engines()
        req = {"prompt": STANDARD_PROMPT, "max_new_tokens": self.s.overhead_out, "ignore_eos": True,
               "stream": "callback", "fresh": True}
        for _ in range(self.s.warmup):
            for e in engines:
                self.call(e, "gen", **req)
        runs: Dict[str, List[Dict[str, Any]]] = {e: [] for e in engines}
        for rep in range(self.s.overhead_reps):
            if self.over_budget("binding_overhead", rep):
                break
            for e in _rotate(engines, rep):
                runs[e].append(self.call(e, "gen", **req) or {})  # aligned by round, for paired ratios
        out: Dict[str, Any] = {}
        for e in engines:
            st = self._gen_stats(runs[e])
            ls = self.load_samples.get(e, [])
            st["load_s"] = _median([x.get("load_s") for x in ls])
            st["load_s_samples"] = [x.get("load_s") for x in ls]
            st["engine_load_ms"] = _median([r.get("engine_load_ms") for r in runs[e]])
            rss = self.call(e, "rss") or {}
            base = (ls[0].get("base") or {}).get("rss_kb") if ls else None
            st["peak_rss_kb"] = rss.get("hwm_kb")
            st["rss_kb"] = rss.get("rss_kb")
            st["harness_rss_kb"] = base
            st["peak_rss_over_harness_kb"] = (rss.get("hwm_kb") - base) if rss.get("hwm_kb") and base else None
            if e.startswith("ovgenai_c") and ls:
                st["library_kind"] = ls[0].get("library_kind")
                st["library"] = ls[0].get("library")
            out[e] = st
        paired = {f"{ov} / {g}": {"ttft": _ratio_stats(_paired(runs[ov], runs[g], "ttft_ms")),
                                  "tpot": _ratio_stats(_paired(runs[ov], runs[g], "tpot_ms"))}
                  for ov in self.ov_engines() for g in self.genai_engines()}
        self.report["binding_overhead"] = {
            "request": {k: v for k, v in req.items()}, "reps": self.s.overhead_reps, "warmup": self.s.warmup,
            "engines": out, "paired": paired,
            "what": ("ovgenai_c over the bundled backend vs openvino_genai pybind: this compares the binding AND the "
                     "engine (our C++ engine vs GenAI's); ovgenai_c[official] vs genai, when present, is the pure "
                     "binding cost; the binding's own per-token cost is isolated in streaming_cost (ABI double)."),
        }

    def _prompt(self, target: int) -> Dict[str, Any]:
        if target in self.prompts:
            return self.prompts[target]
        r = self.call(GENAI_PA, "make_prompt", target=target, fresh=True) if GENAI_PA in self.workers else None
        if not r:
            words = FILLER.split()
            n = max(1, int(target * 0.7) - 30)
            text = " ".join((words * (n // len(words) + 1))[:n])
            r = {"text": text, "n_tokens": None}
        self.prompts[target] = r
        return r

    def backend_parity(self) -> None:
        engines = self.engines()
        cells = [(L, O) for L in self.s.prompt_lens for O in self.s.out_lens]
        prompts = {L: self._prompt(L) for L in self.s.prompt_lens}
        for L in self.s.prompt_lens:  # warm every shape once per engine
            for e in engines:
                self.call(e, "gen", prompt=prompts[L]["text"], max_new_tokens=4, ignore_eos=True, fresh=True)
        runs: Dict[Tuple[str, int, int], List[Dict[str, Any]]] = {}
        k = 0
        for rep in range(self.s.parity_reps):
            if self.over_budget("backend_parity", rep):
                break
            for (L, O) in cells:
                for e in _rotate(engines, k):
                    r = self.call(e, "gen", prompt=prompts[L]["text"], max_new_tokens=O, ignore_eos=True, fresh=True)
                    runs.setdefault((e, L, O), []).append(r or {})
                k += 1
        table = []
        pooled: Dict[str, Dict[str, List[float]]] = {}
        for (L, O) in cells:
            row: Dict[str, Any] = {"prompt_tokens_target": L, "max_new_tokens": O, "engines": {}}
            for e in engines:
                st = self._gen_stats(runs.get((e, L, O), []))
                row["engines"][e] = {k2: st.get(k2) for k2 in ("ttft_ms", "tpot_ms", "throughput", "n_in", "n_out",
                                                               "wall_s", "runs")}
            for ov in self.ov_engines():
                for g in self.genai_engines():
                    a, b = row["engines"].get(ov, {}), row["engines"].get(g, {})
                    tag = f"{ov} / {g}"
                    row.setdefault("ratios", {})[tag] = {
                        "ttft": _ratio(a.get("ttft_ms"), b.get("ttft_ms")),
                        "tpot": _ratio(a.get("tpot_ms"), b.get("tpot_ms"))}
                    pr = {m: _paired(runs.get((ov, L, O), []), runs.get((g, L, O), []), f"{m}_ms")
                          for m in ("ttft", "tpot")}
                    row.setdefault("paired", {})[tag] = {m: _ratio_stats(v) for m, v in pr.items()}
                    for m, v in pr.items():
                        pooled.setdefault(tag, {}).setdefault(m, []).extend(v)
            table.append(row)
        self.report["backend_parity"] = {"reps": self.s.parity_reps, "cells": table,
                                         "pooled": {tag: {m: _ratio_stats(v) for m, v in d.items()}
                                                    for tag, d in pooled.items()},
                                         "prompt_tokens_actual": {str(L): prompts[L].get("n_tokens")
                                                                  for L in self.s.prompt_lens},
                                         "metric": "engine-reported TTFT/TPOT (perf metrics), median of reps, "
                                                   "ignore_eos so every engine makes the same number of tokens"}

    def greedy_agreement(self) -> None:
        engines = self.engines()
        prompts = AGREEMENT_PROMPTS[:self.s.agree_prompts]
        texts: Dict[str, List[Optional[str]]] = {e: [] for e in engines}
        for i, p in enumerate(prompts):
            if self.over_budget("greedy_agreement", i // 4):
                prompts = prompts[:i]
                break
            for e in _rotate(engines, i):
                r = self.call(e, "gen", prompt=p, max_new_tokens=self.s.agree_tokens)
                texts[e].append(r.get("text") if r else None)
        pairs: Dict[str, Any] = {}
        for i, a in enumerate(engines):
            for b in engines[i + 1:]:
                same, prefix = 0, []
                n = 0
                for ta, tb in zip(texts[a], texts[b]):
                    if ta is None or tb is None:
                        continue
                    n += 1
                    same += ta == tb
                    j = 0
                    while j < min(len(ta), len(tb)) and ta[j] == tb[j]:
                        j += 1
                    prefix.append(j)
                pairs[f"{a} vs {b}"] = {"prompts": n, "identical": same, "rate": (same / n) if n else None,
                                        "mean_common_prefix_chars": (sum(prefix) / len(prefix)) if prefix else None}
        self.report["greedy_agreement"] = {"max_new_tokens": self.s.agree_tokens, "prompts": prompts,
                                           "pairs": pairs, "texts": texts,
                                           "note": "greedy, stop at EOS; token-exact means the decoded texts are equal"}

    def streaming_cost(self) -> None:
        sec: Dict[str, Any] = {}
        # 1. the ABI double: binding cost in isolation
        if SOURCE_ROOT is None:
            sec["abi_double"] = {"skipped": "the ABI double is only in a source tree (tests/abi_double/)"}
        else:
            try:
                sys.path.insert(0, str(SOURCE_ROOT / "tests")) if str(SOURCE_ROOT / "tests") not in sys.path else None
                from abi_double.build import build_double

                so = build_double(_cache_dir() / "abi_double")
                spec = {"engine": "double", "library": str(so),
                        "controls_h": str(SOURCE_ROOT / "tests" / "abi_double" / "controls.h"),
                        "model": str(self.logdir / "double-model")}
                w = self.start("double", spec)
                if w is None:
                    sec["abi_double"] = {"error": self.engine_errors.get("double")}
                else:
                    r = self.call("double", "stream_cost", tokens=self.s.double_tokens, reps=self.s.double_reps)
                    if r:
                        n = r["tokens"]
                        med = {m: _median(v) for m, v in r["times_s"].items()}
                        best = {m: min(v) for m, v in r["times_s"].items() if v}
                        base = best["c_no_streamer"]
                        per = {m: (best[m] - base) * 1e6 / n for m in best}
                        sec["abi_double"] = {
                            "tokens": n, "reps": self.s.double_reps, "median_s": med, "best_s": best,
                            "us_per_token_vs_c_no_streamer": per,
                            "us_per_token_vs_generate_no_streamer": {m: (best[m] - best["generate"]) * 1e6 / n
                                                                     for m in ("callback", "iter", "async")},
                            "per_call_us": {m: min(v) * 1e6 for m, v in r.get("per_call_s", {}).items() if v},
                            "what": ("c_no_streamer: the C call alone (results only); c_trivial_callback: a cffi "
                                     "callback that returns 0; generate: ovgenai_c generate() without a user "
                                     "streamer (its bridge callback is always installed for cancellation); "
                                     "callback: generate(streamer=f); iter: stream(); async: astream()"),
                        }
                    self.workers.pop("double").quit()
            except Exception as exc:
                sec["abi_double"] = {"error": f"{type(exc).__name__}: {exc}"}
        # 2. real engines: streaming vs no streamer, same number of tokens
        engines = self.engines()
        n_out = self.s.stream_out
        modes = {e: (["none", "callback", "iter", "async"] if e.startswith("ovgenai_c") else ["none", "callback"])
                 for e in engines}
        runs: Dict[Tuple[str, str], List[float]] = {}
        k = 0
        for rep in range(self.s.stream_reps):  # the engines are warm by now
            if self.over_budget("streaming_cost", rep - 1):  # at least two repetitions, for the noise figure
                break
            for e in _rotate(engines, rep):
                for m in _rotate(modes[e], k):
                    k += 1
                    r = self.call(e, "gen", prompt=STANDARD_PROMPT, max_new_tokens=n_out, ignore_eos=True, stream=m,
                                  fresh=True)
                    if r:
                        runs.setdefault((e, m), []).append(r["wall_s"])
        real: Dict[str, Any] = {}
        for e in engines:
            best = {m: (min(runs[(e, m)]) if runs.get((e, m)) else None) for m in modes[e]}
            base = best.get("none")
            nones = runs.get((e, "none"), [])
            real[e] = {"tokens": n_out, "best_wall_s": best, "samples_s": {m: runs.get((e, m), []) for m in modes[e]},
                       "us_per_token_vs_no_streamer": {m: ((best[m] - base) * 1e6 / n_out) if best[m] is not None and
                                                       base is not None else None for m in modes[e] if m != "none"},
                       "noise_us_per_token": ((max(nones) - min(nones)) * 1e6 / n_out) if len(nones) > 1 else None}
        sec["engines"] = real
        sec["note"] = ("real engines: best-of-reps wall time with a streamer minus without, per token; differences "
                       "smaller than noise_us_per_token (the spread of the no-streamer runs) are not resolved. The ABI "
                       "double isolates the binding's cost.")
        self.report["streaming_cost"] = sec

    def concurrency(self) -> None:
        ovs = self.ov_engines()
        if not ovs:
            self.report["concurrency"] = {"skipped": "no ovgenai_c engine (bundled backend not built?)"}
            return
        e = ovs[0]
        n = self.s.conc_threads
        req = {"prompt": STANDARD_PROMPT, "max_new_tokens": self.s.conc_out, "threads": n, "fresh": True,
               "requests": self.s.conc_requests}
        res: Dict[str, List[Dict[str, Any]]] = {"shared": [], "separate": []}
        self.call(e, "concurrency", mode="separate", **{**req, "requests": 1})  # create the extra pipelines, warm
        for rep in range(self.s.conc_reps):
            if self.over_budget("concurrency", rep):
                break
            for mode in _rotate(["shared", "separate"], rep):
                r = self.call(e, "concurrency", mode=mode, **req)
                if r:
                    res[mode].append(r)
        out: Dict[str, Any] = {"engine": e, "threads": n, "requests_per_thread": self.s.conc_requests,
                               "max_new_tokens": self.s.conc_out, "reps": self.s.conc_reps,
                               "how": "plain ovgenai_c LLMPipelines: 'shared' = N threads on one pipeline (serialised "
                                      "on its owner thread); 'separate' = one pipeline per thread"}
        for mode, rs in res.items():
            lat = [x for r in rs for x in r["latencies_s"]]
            toks = sum(r["tokens"] for r in rs)
            wall = sum(r["wall_s"] for r in rs)
            out[mode] = {"aggregate_tokens_per_s": (toks / wall) if wall else None,
                         "p50_latency_s": _pct(lat, 0.5), "p95_latency_s": _pct(lat, 0.95), "requests": len(lat),
                         "errors": [x for r in rs for x in r["errors"]][:3],
                         "process_peak_rss_kb": max((r.get("hwm_kb") or 0) for r in rs) if rs else None}
        self.report["concurrency"] = out

    def finish_workers(self) -> None:
        for name in list(self.workers):
            self.workers.pop(name).quit()

    # --- ratios ---
    def ratios(self) -> None:
        lines: List[Dict[str, Any]] = []

        def add(what: str, value: Optional[float], target: Optional[float], unit: str = "x",
                ci: Optional[Sequence[float]] = None) -> None:
            status = None
            if value is not None and target is not None:
                status = "ok" if value <= target else "over"
                if status == "over" and ci and ci[0] <= target:
                    status = "over, within noise"  # the 95 % interval still reaches the target
            lines.append({"what": what, "value": value, "target": target, "unit": unit, "status": status,
                          "ci95": list(ci) if ci else None})

        def add_paired(what: str, st: Optional[Dict[str, Any]], fallback: Optional[float], target: float) -> None:
            """A ratio from paired rounds: geometric mean with its 95 % interval (ratio of medians without them)."""
            if st:
                add(f"{what} [geomean of {st['n']} paired rounds]", st["geomean"], target, ci=st.get("ci95"))
            else:
                add(what, fallback, target)

        over = self.report["binding_overhead"].get("engines", {})
        paired = self.report["binding_overhead"].get("paired", {})
        for ov in self.ov_engines() or [l for l, _ in self.libs]:
            for g in self.genai_engines() or [GENAI_PA, GENAI_SDPA]:
                a, b = over.get(ov, {}), over.get(g, {})
                tag = f"{ov} / {g}"
                pt = paired.get(tag) or {}
                add_paired(f"binding: TTFT {tag}", pt.get("ttft"), _ratio(a.get("ttft_ms"), b.get("ttft_ms")),
                           TARGETS["ttft_ratio"])
                add_paired(f"binding: TPOT {tag}", pt.get("tpot"), _ratio(a.get("tpot_ms"), b.get("tpot_ms")),
                           TARGETS["tpot_ratio"])
                add(f"binding: wall TTFT (to first streamed text) {tag}", _ratio(a.get("wall_ttft_ms"),
                                                                                 b.get("wall_ttft_ms")), None)
                add(f"binding: end-to-end tokens/s {tag}", _ratio(a.get("e2e_tokens_per_s"),
                                                                 b.get("e2e_tokens_per_s")), None)
                add(f"binding: peak RSS {tag}", _ratio(a.get("peak_rss_kb"), b.get("peak_rss_kb")), None)
                add(f"binding: load time {tag}", _ratio(a.get("load_s"), b.get("load_s")), None)
                add(f"binding: per-call time outside the engine's generate timer, ms, {ov} vs {g}",
                    (a.get("outside_engine_ms") or 0) - (b.get("outside_engine_ms") or 0)
                    if a.get("outside_engine_ms") is not None and b.get("outside_engine_ms") is not None else None,
                    None, "ms")
        bp = self.report["backend_parity"]
        for tag, st in (bp.get("pooled") or {}).items():
            ncells = len(bp.get("cells", []))
            add_paired(f"parity, all {ncells} cells pooled: TTFT {tag}", st.get("ttft"), None, TARGETS["ttft_ratio"])
            add_paired(f"parity, all {ncells} cells pooled: TPOT {tag}", st.get("tpot"), None, TARGETS["tpot_ratio"])
        for row in bp.get("cells", []):
            for tag, r in (row.get("ratios") or {}).items():
                cell = f"prompt {row['prompt_tokens_target']}, out {row['max_new_tokens']}"
                pt = (row.get("paired") or {}).get(tag) or {}
                add_paired(f"parity: TTFT {tag} ({cell})", pt.get("ttft"), r.get("ttft"), TARGETS["ttft_ratio"])
                add_paired(f"parity: TPOT {tag} ({cell})", pt.get("tpot"), r.get("tpot"), TARGETS["tpot_ratio"])
        for pair, v in self.report["greedy_agreement"].get("pairs", {}).items():
            add(f"agreement: {pair}", v.get("rate"), None, "rate")
        dbl = self.report["streaming_cost"].get("abi_double", {})
        for m, v in (dbl.get("us_per_token_vs_c_no_streamer") or {}).items():
            if m in ("callback", "iter", "async", "generate"):
                add(f"streaming: {m} per token (ABI double, vs C with no streamer)", v,
                    TARGETS["stream_us_per_token"], "us")
        mods = self.report["import_footprint"].get("modules", {})
        oi, gi = mods.get("ovgenai_c", {}), mods.get("openvino_genai", {})
        add("import: ovgenai_c wall", oi.get("import_s"), TARGETS["import_s"], "s")
        add("import: openvino_genai wall", gi.get("import_s"), None, "s")
        add("import: ovgenai_c / openvino_genai time", _ratio(oi.get("import_s"), gi.get("import_s")), None)
        add("import: ovgenai_c / openvino_genai RSS delta", _ratio(oi.get("rss_delta_kb"), gi.get("rss_delta_kb")), None)
        pc = dbl.get("per_call_us") or {}
        if "c_call" in pc and "generate" in pc:
            add("binding: fixed cost per generate() call over the C call (ABI double)", pc["generate"] - pc["c_call"],
                None, "us")
        for e, v in (self.report["physical_limit"].get("decode_fraction") or {}).items():
            add(f"physical: {e} decode speed / bandwidth bound", v.get("fraction_of_bound"), None, "fraction")
        c = self.report["concurrency"]
        if "shared" in c and "separate" in c:
            add("concurrency: tokens/s separate / shared", _ratio(c["separate"].get("aggregate_tokens_per_s"),
                                                                 c["shared"].get("aggregate_tokens_per_s")), None)
        self.report["ratios"] = {"lines": lines, "targets": TARGETS}


def a_device(args: argparse.Namespace) -> str:
    return getattr(args, "device", None) or "CPU"


# ----------------------------------------------------------------------------------------------------------------
# human output
# ----------------------------------------------------------------------------------------------------------------
def _table(headers: List[str], rows: List[List[Any]]) -> str:
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)),
           "  ".join("-" * w for w in widths)]
    for r in cells:
        out.append("  ".join(c.rjust(widths[i]) if i else c.ljust(widths[i]) for i, c in enumerate(r)))
    return "\n".join(out)


def render(report: Dict[str, Any]) -> str:
    out: List[str] = []
    m = report.get("meta", {})
    mach = m.get("machine", {})
    out.append(f"ovgenai_c benchmark — {m.get('date_utc')} — {mach.get('cpu')} ({mach.get('cores')} cores), "
               f"Python {mach.get('python')}")
    out.append(f"model: {m.get('model')}  (openvino_model.bin {(_fmt((m.get('model_bin_bytes') or 0) / 1e6, 1))} MB)"
               f"  device {m.get('device')}{'  [--quick]' if m.get('quick') else ''}")
    out.append("engines: " + "; ".join(f"{l['engine']} = {l['path']}" for l in m.get("ovgenai_c_libraries", [])) +
               ("; genai[PA] / genai[SDPA] = openvino_genai pybind " + m.get("versions", {}).get("openvino-genai", "")
                if (m.get("oracle") or {}).get("available") else f"; openvino_genai: {(m.get('oracle') or {}).get('reason')}"))
    for k, v in (m.get("engine_errors") or {}).items():
        out.append(f"  ! {k}: {v.splitlines()[0] if v else v}")

    bo = report.get("binding_overhead", {})
    if bo.get("engines"):
        out.append("")
        out.append(f"Binding overhead — \"{bo['request']['prompt']}\", {bo['request']['max_new_tokens']} tokens "
                   f"(ignore_eos), streamer on, median of {bo['reps']}")
        rows = []
        for e, s in bo["engines"].items():
            rows.append([e, s.get("ttft_ms"), s.get("tpot_ms"), s.get("throughput"), s.get("wall_ttft_ms"),
                         s.get("e2e_tokens_per_s"), s.get("outside_engine_ms"),
                         (s.get("peak_rss_kb") or 0) / 1024 if s.get("peak_rss_kb") else None,
                         s.get("load_s"), s.get("n_in")])
        out.append(_table(["engine", "TTFT ms", "TPOT ms", "tok/s", "wall TTFT ms", "e2e tok/s", "outside ms",
                           "peak RSS MiB", "load s", "in tok"], rows))
        out.append("  (outside ms: wall time of the Python call minus the engine's own generate_duration = binding "
                   "+ marshalling + thread hand-off per call)")
        out.append("  (" + bo.get("what", "") + ")")
    elif bo.get("error"):
        out.append(f"\nBinding overhead: error: {bo['error']}")

    bp = report.get("backend_parity", {})
    if bp.get("cells"):
        out.append("")
        out.append(f"Backend parity — engine-reported TTFT / TPOT in ms, median of {bp['reps']}")
        engines = list(bp["cells"][0]["engines"])
        rows = []
        for c in bp["cells"]:
            n_in = next((v.get("n_in") for v in c["engines"].values() if v.get("n_in")), None)
            r: List[Any] = [f"{c['prompt_tokens_target']} ({_fmt(n_in, 0)}) / {c['max_new_tokens']}"]
            for e in engines:
                s = c["engines"].get(e, {})
                r += [s.get("ttft_ms"), s.get("tpot_ms")]
            for tag, v in (c.get("ratios") or {}).items():
                r += [v.get("ttft"), v.get("tpot")]
            rows.append(r)
        headers = ["prompt (actual) / out"]
        for e in engines:
            headers += [f"{e} TTFT", "TPOT"]
        for tag in (bp["cells"][0].get("ratios") or {}):
            short = tag.replace("ovgenai_c", "ov").replace("genai", "g")
            headers += [f"{short} TTFT x", "TPOT x"]
        out.append(_table(headers, rows))
        out.append("  prompt = target tokens (actual tokens after the chat template, which the C ABI always applies)")
    elif bp.get("error"):
        out.append(f"\nBackend parity: error: {bp['error']}")

    ga = report.get("greedy_agreement", {})
    if ga.get("pairs"):
        out.append("")
        out.append(f"Greedy agreement — {len(ga['prompts'])} prompts, up to {ga['max_new_tokens']} tokens, identical text")
        out.append(_table(["pair", "identical", "prompts", "rate", "common prefix chars"],
                          [[k, v["identical"], v["prompts"], v["rate"], v["mean_common_prefix_chars"]]
                           for k, v in ga["pairs"].items()]))

    sc = report.get("streaming_cost", {})
    d = sc.get("abi_double", {})
    out.append("")
    if sc.get("skipped") or sc.get("error"):
        out.append(f"Streaming cost: {sc.get('skipped') or sc.get('error')}")
    elif d.get("us_per_token_vs_c_no_streamer"):
        out.append(f"Streaming cost — ABI double, {d['tokens']} tokens, best of {d['reps']} (µs per token over the C "
                   "call with no streamer)")
        per = d["us_per_token_vs_c_no_streamer"]
        out.append(_table(["mode", "µs/token", "total ms"],
                          [[mo, per.get(mo), d["best_s"][mo] * 1000] for mo in d["best_s"]]))
        pc = d.get("per_call_us") or {}
        if pc:
            out.append("Fixed cost of one call on the ABI double (1 token): " +
                       ", ".join(f"{k} {v:.0f} µs" for k, v in pc.items()))
    else:
        out.append(f"Streaming cost — ABI double: {d.get('skipped') or d.get('error')}")
    if sc.get("engines"):
        rows = []
        for e, v in sc["engines"].items():
            per = v.get("us_per_token_vs_no_streamer", {})
            rows.append([e, v["tokens"], per.get("callback"), per.get("iter"), per.get("async"),
                         v.get("noise_us_per_token")])
        out.append("Streaming on real engines (µs per token over the same engine without a streamer, best of reps)")
        out.append(_table(["engine", "tokens", "callback", "iter", "async", "± noise"], rows))

    imp = report.get("import_footprint", {}).get("modules", {})
    if imp:
        out.append("")
        out.append(f"Import and footprint — fresh process each, median of {report['import_footprint'].get('reps')}")
        rows = []
        for mname, v in imp.items():
            rows.append([mname, v.get("import_s"), (v.get("rss_kb") or 0) / 1024 if v.get("rss_kb") else None,
                         (v.get("rss_delta_kb") or 0) / 1024 if v.get("rss_delta_kb") is not None else None,
                         v.get("process_wall_s"), v.get("first_use_load_library_s")])
        out.append(_table(["import", "import s", "RSS MiB", "+RSS MiB", "process wall s", "load_library s"], rows))

    pl = report.get("physical_limit", {})
    if pl.get("bandwidth_gbps"):
        out.append("")
        out.append(f"Physical limit — read bandwidth {pl['bandwidth_gbps']:.1f} GB/s (numpy sum, best of runs); "
                   f"weights {(pl.get('weight_bytes') or 0) / 1e6:.1f} MB → decode bound "
                   f"{_fmt(pl.get('decode_bound_tokens_per_s'), 0)} tok/s ({_fmt(pl.get('decode_bound_tpot_ms'))} ms/token)")
        rows = [[e, v["tpot_ms"], v["tokens_per_s"], v["fraction_of_bound"]]
                for e, v in (pl.get("decode_fraction") or {}).items()]
        if rows:
            out.append(_table(["engine", "TPOT ms", "tok/s", "fraction of bound"], rows))

    cc = report.get("concurrency", {})
    out.append("")
    if "shared" in cc:
        out.append(f"Concurrency — {cc['engine']}, {cc['threads']} threads × {cc['requests_per_thread']} requests × "
                   f"{cc['max_new_tokens']} tokens")
        out.append(_table(["mode", "agg tok/s", "p50 s", "p95 s", "requests"],
                          [[mo, cc[mo]["aggregate_tokens_per_s"], cc[mo]["p50_latency_s"], cc[mo]["p95_latency_s"],
                            cc[mo]["requests"]] for mo in ("shared", "separate")]))
    else:
        out.append(f"Concurrency: {cc.get('skipped') or cc.get('error')}")

    rl = report.get("ratios", {}).get("lines", [])
    if rl:
        out.append("")
        out.append("Ratios (targets: TPOT ≤ 1.00, TTFT ≤ 1.05 vs GenAI; streaming ≤ 20 µs/token; import ≤ 0.05 s)")
        out.append("  (engine ratios: geometric mean of per-round ratios, every round running all engines back to back, "
                   "with its 95% interval; 'within noise' = above the target, but the interval reaches it)")
        for ln in rl:
            v = ln["value"]
            val = "-" if v is None else (f"{v:.3f}" if ln["unit"] in ("x", "rate", "fraction", "s") else
                                         f"{v:.2f} ms" if ln["unit"] == "ms" else f"{v:.1f} µs")
            tgt = "" if ln["target"] is None else f"   target ≤ {ln['target']}{' µs' if ln['unit'] == 'us' else ''}"
            ci = ln.get("ci95")
            band = f" (95% CI {ci[0]:.3f}–{ci[1]:.3f})" if ci else ""
            st = "" if ln["status"] is None else {"ok": "   ok", "over": "   OVER"}.get(ln["status"], "   " + ln["status"])
            out.append(f"  {ln['what']}: {val}{band}{tgt}{st}")
    out.append("")
    out.append(f"elapsed {_fmt(m.get('elapsed_s'), 1)} s; load average (1/5/15 min) at start "
               f"{m.get('load_average_start')}, at end {m.get('load_average_end')} on {mach.get('cores')} cores"
               + (f"; repetitions trimmed by the time budget: {m['trimmed_by_budget']}" if m.get("trimmed_by_budget")
                  else ""))
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------------------------
# entry point
# ----------------------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="OpenVINO IR model folder (default: SmolLM2-135M-Instruct, /tmp/smol or the cache)")
    p.add_argument("--out", default="bench_results.json", help="JSON output file (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="minimal repetitions and sizes (tiny models, < 60 s)")
    p.add_argument("--compare", action="store_true", help="compare engines side by side (the default; accepted for "
                                                          "`ovgenai-c bench --compare`)")
    p.add_argument("--library", help="the GenAI C library for ovgenai_c (default: the bundled backend, plus an "
                                     "official library when one is discoverable)")
    p.add_argument("--device", default="CPU")
    p.add_argument("--reps", type=int, help="repetitions for every timed section")
    p.add_argument("--prompt-lens", help="comma-separated prompt lengths in tokens (default 16,256,1024)")
    p.add_argument("--out-lens", help="comma-separated output lengths in tokens (default 32,128)")
    p.add_argument("--threads", type=int, help="threads for the concurrency section (default 2)")
    p.add_argument("--no-genai", action="store_true", help="do not run openvino_genai (ovgenai_c engines only)")
    p.add_argument("--no-fetch", action="store_true", help="never pip-fetch openvino_genai when it is missing")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a single request may take")
    p.add_argument("--budget", type=float, help="time budget in seconds: sections run fewer repetitions (at least "
                                                "one) once their share is used up (default 540, --quick 50; 0 = none)")
    p.add_argument("--no-snapshot", action="store_true", help="load the bundled backend in place instead of from a "
                                                                 "private copy made at start")
    p.add_argument("--only", help="comma-separated sections to run (others are reported as skipped): "
                                  + ", ".join(s for s in SECTIONS if s not in ("meta", "ratios")))
    p.add_argument("model_pos", nargs="?", metavar="MODEL", help="same as --model")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        return _worker_main(argv[1])
    args = build_parser().parse_args(argv)
    if args.budget is None:
        args.budget = 50.0 if args.quick else 540.0
    if args.model_pos and not args.model:
        args.model = args.model_pos
    if args.only:
        args.only = [x.strip() for x in args.only.split(",") if x.strip()]
        bad = [x for x in args.only if x not in SECTIONS or x in ("meta", "ratios")]
        if bad:
            print(f"bench: unknown section(s) for --only: {', '.join(bad)}", file=sys.stderr)
            return 2
    if args.model and not Path(args.model).is_dir():
        print(f"bench: --model {args.model} is not a folder", file=sys.stderr)
        return 2
    bench = Bench(args)
    try:
        report = bench.run()
    finally:
        for w in list(bench.workers.values()):
            w.kill()
    text = render(report)
    print(text)
    out = Path(args.out)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"JSON written to {out}")
    return 0


if __name__ == "__main__":
    # Run by path (the parent spawns workers this way): do not let this package's folder shadow top-level modules.
    if sys.path and Path(sys.path[0] or ".").resolve() == PKG_DIR:
        sys.path.pop(0)
    sys.exit(main())
