"""The engines a worker process serves, one per process: ovgenai_c over a GenAI C library, openvino_genai
pybind (the comparison engine: imported only here, inside its own worker) and ovgenai_c over the C ABI test
double (engine time ~0, for the binding's own streaming cost), and openvino_genai's ContinuousBatchingPipeline (the
serve section's in-process batching), and the two WhisperPipelines of the whisper section. Each answers the
operations the parent sends (``gen``, ``concurrency``, ``make_prompt``, ``stream_cost``, ``serve_load``,
``transcribe``) with a dict of measurements."""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from .prompts import FILLER, NONCE_SAMPLE, prompt_for
from .stats import rotate


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


def rss() -> Dict[str, Optional[int]]:
    """This process's resident set and its high-water mark, in KiB."""
    return {"rss_kb": _proc_status_kb("VmRSS"), "hwm_kb": _proc_status_kb("VmHWM")}


class Engine:
    """One engine inside a worker process."""

    kind = "?"

    def __init__(self, spec: Dict[str, Any]) -> None:
        self.spec = spec
        self.base = rss()
        self.info: Dict[str, Any] = {}

    def hello(self) -> Dict[str, Any]:
        return {"base": self.base, **rss(), **self.info}


class OvgenaiEngine(Engine):
    """ovgenai_c over one GenAI C library (``spec["library"]``, else the default discovery)."""

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
        draft = spec.get("draft")  # speculative decoding: {"path", "properties"}
        extra = {"draft_model": ovgenai_c.draft_model(draft["path"], **(draft.get("properties") or {}))} if draft else {}
        self.pipe = ovgenai_c.LLMPipeline(spec["model"], spec.get("device", "CPU"), library=self.lib, **self.props,
                                          **extra)
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
        kw.update(req.get("lookup") or {})  # num_assistant_tokens / max_ngram_size (a prompt_lookup pipeline)
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
        return {"wall_s": wall, "latencies_s": lat, "tokens": tokens[0], "errors": errors, **rss()}

    def close(self) -> None:
        for p in self.extra:
            p.close()
        self.pipe.close()


class GenaiEngine(Engine):
    """openvino_genai pybind (``spec["properties"]`` passed to its LLMPipeline)."""

    def __init__(self, spec: Dict[str, Any]) -> None:
        super().__init__(spec)
        t0 = time.perf_counter()
        import openvino_genai

        t1 = time.perf_counter()
        self.g = openvino_genai
        props = dict(spec.get("properties") or {})
        draft = spec.get("draft")  # speculative decoding: {"path", "properties"}
        if draft:
            props["draft_model"] = openvino_genai.draft_model(draft["path"], spec.get("device", "CPU"),
                                                              **(draft.get("properties") or {}))
        self.pipe = openvino_genai.LLMPipeline(spec["model"], spec.get("device", "CPU"), **props)
        t2 = time.perf_counter()
        self.info = {"import_s": t1 - t0, "load_s": t2 - t1, "versions": {"openvino_genai": openvino_genai.__version__},
                     "module": openvino_genai.__file__}

    def gen(self, req: Dict[str, Any]) -> Dict[str, Any]:
        cfg = self.g.GenerationConfig()
        cfg.max_new_tokens = int(req["max_new_tokens"])
        if req.get("ignore_eos"):
            cfg.ignore_eos = True
        for k, v in (req.get("lookup") or {}).items():  # a prompt_lookup pipeline's fields
            setattr(cfg, k, int(v))
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


class GenaiCBEngine(Engine):
    """openvino_genai's ContinuousBatchingPipeline in-process (the serve section's comparison): concurrent
    requests share its decode steps, driven by ``add_request`` / ``step`` in this process."""

    def __init__(self, spec: Dict[str, Any]) -> None:
        super().__init__(spec)
        t0 = time.perf_counter()
        import openvino_genai

        t1 = time.perf_counter()
        self.g = openvino_genai
        props = dict(spec.get("properties") or {})
        # the scheduling the server's batching engine runs by default (GenAI's latency-oriented config: no step
        # budget, prefix caching on), so both sides schedule alike; SchedulerConfig() alone would give GenAI a
        # 256-token step budget and no prefix cache
        sched = openvino_genai.SchedulerConfig()
        sched.max_num_batched_tokens = (1 << 64) - 1
        sched.enable_prefix_caching = True
        self.pipe = openvino_genai.ContinuousBatchingPipeline(spec["model"], sched, spec.get("device", "CPU"), props)
        self.tok = self.pipe.get_tokenizer()
        self.next_id = 0
        t2 = time.perf_counter()
        self.info = {"import_s": t1 - t0, "load_s": t2 - t1, "versions": {"openvino_genai": openvino_genai.__version__},
                     "module": openvino_genai.__file__}

    def _templated(self, content: str) -> str:
        try:
            return self.tok.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True)
        except Exception:  # no chat template: the message as it is (what the server does then)
            return content

    def serve_load(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """``clients`` clients arriving together, each with ``per_client`` requests back to back (a client's next
        request is added when its previous one finishes); greedy, the model's EOS, ``max_new_tokens``. Per
        request: time from add_request to its first generated token; tokens generated."""
        cfg = self.pipe.get_config()
        cfg.max_new_tokens = int(req["max_new_tokens"])
        cfg.do_sample = False
        if hasattr(cfg, "apply_chat_template"):
            cfg.apply_chat_template = False  # templated here, as the server's chat route does
        clients, per_client = int(req["clients"]), int(req["per_client"])
        template = str(req["message"])
        left = {c: per_client for c in range(clients)}
        active: Dict[int, Dict[str, Any]] = {}
        ttfts: List[Optional[float]] = []
        tokens: List[int] = []
        counter = [int(req.get("first_index", 1)) - 1]

        def add(client: int) -> None:
            left[client] -= 1
            counter[0] += 1
            self.next_id += 1
            prompt = self._templated(template.format(i=counter[0]))
            active[self.next_id] = {"client": client, "t": time.perf_counter(), "first": None, "n": 0,
                                    "h": self.pipe.add_request(self.next_id, prompt, cfg)}

        t0 = time.perf_counter()
        for c in range(clients):
            add(c)
        while active:
            self.pipe.step()
            now = time.perf_counter()
            for rid in list(active):
                a = active[rid]
                h = a["h"]
                if h.can_read():
                    n = sum(len(o.generated_ids) for o in h.read().values())
                    a["n"] += n
                    if n and a["first"] is None:
                        a["first"] = now
                if h.get_status() != self.g.GenerationStatus.RUNNING and not h.can_read():
                    del active[rid]
                    ttfts.append((a["first"] - a["t"]) if a["first"] is not None else None)
                    tokens.append(a["n"])
                    if left[a["client"]] > 0:
                        add(a["client"])
        wall = time.perf_counter() - t0
        return {"wall_s": wall, "ttft_s": ttfts, "tokens": tokens}

    def close(self) -> None:
        del self.pipe


class DoubleEngine(Engine):
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
            for m in rotate(list(per_call), rep):
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


class WhisperEngine(Engine):
    """A Whisper pipeline: ``transcribe`` times one ``generate`` call on a float32 16 kHz clip stored as a .npy
    file (loaded and converted to the pipeline's input type before the clock starts)."""

    def _audio(self, req: Dict[str, Any]) -> Any:
        import numpy as np

        audio = np.load(req["audio"]).astype(np.float32)
        cut = req.get("max_samples")
        return audio[: int(cut)] if cut else audio

    def _timed(self, audio: Any, stream: bool = False) -> Dict[str, Any]:
        """One timed call; ``stream``: with a text streamer (a callable, GenAI's TextStreamer rules on both sides),
        also the time to its first non-empty text."""
        first: List[float] = []
        streamer = None
        if stream:
            def streamer(text: str) -> None:
                if text and not first:
                    first.append(time.perf_counter())

        t0 = time.perf_counter()
        result = self.pipe.generate(audio) if streamer is None else self.pipe.generate(audio, streamer=streamer)
        wall = time.perf_counter() - t0
        texts = list(result.texts)
        out = {"wall_s": wall, "text": texts[0] if texts else ""}
        if stream:
            out["first_text_s"] = (first[0] - t0) if first else None
        return out

    def close(self) -> None:
        close = getattr(self.pipe, "close", None)
        if close is not None:
            close()


class WhisperOvgenaiEngine(WhisperEngine):
    """ovgenai_c's WhisperPipeline over one GenAI C library (``spec["library"]``, else the default discovery)."""

    def __init__(self, spec: Dict[str, Any]) -> None:
        super().__init__(spec)
        t0 = time.perf_counter()
        import ovgenai_c
        from ovgenai_c import _loader

        lib_path = spec.get("library")
        self.lib = _loader.open_library(lib_path) if lib_path else _loader.get_library()
        t1 = time.perf_counter()
        self.pipe = ovgenai_c.WhisperPipeline(spec["model"], spec.get("device", "CPU"), library=self.lib,
                                              **dict(spec.get("properties") or {}))
        t2 = time.perf_counter()
        self.info = {"import_s": t1 - t0, "load_s": t2 - t1, "library": self.lib.path, "library_kind": self.lib.kind,
                     "versions": dict(self.lib.versions)}

    def transcribe(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self._timed(self._audio(req), bool(req.get("stream")))


class WhisperGenaiEngine(WhisperEngine):
    """openvino_genai's WhisperPipeline (pybind), ``spec["properties"]`` passed to its constructor."""

    def __init__(self, spec: Dict[str, Any]) -> None:
        super().__init__(spec)
        t0 = time.perf_counter()
        import openvino_genai

        t1 = time.perf_counter()
        self.pipe = openvino_genai.WhisperPipeline(spec["model"], spec.get("device", "CPU"),
                                                   **dict(spec.get("properties") or {}))
        t2 = time.perf_counter()
        self.info = {"import_s": t1 - t0, "load_s": t2 - t1,
                     "versions": {"openvino_genai": openvino_genai.__version__}}

    def transcribe(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return self._timed(self._audio(req).tolist(), bool(req.get("stream")))  # its RawSpeechInput: a list


ENGINES = {"ovgenai_c": OvgenaiEngine, "genai": GenaiEngine, "genai_cb": GenaiCBEngine, "double": DoubleEngine,
           "whisper_ovgenai_c": WhisperOvgenaiEngine, "whisper_genai": WhisperGenaiEngine}
