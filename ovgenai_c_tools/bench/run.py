"""The run: its settings, the engines' worker processes, and one method per report section (each repetition
rotates over the engines so machine drift hits them all alike; a failing section is reported, the run goes
on). ``Bench(args).run()`` returns the report dict that render.render() prints and the CLI writes as JSON."""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .gguf_load import find_gguf, measure_gguf_load
from .environment import SOURCE_ROOT, cache_dir, default_model, ensure_oracle, find_libraries, say, worker_env
from .official import GENAI_ARCHIVE, OFFICIAL, archive_pybind_env, compare_versions
from .official import discover as discover_official
from .probes import loadavg, measure_bandwidth, measure_imports
from .prompts import AGREEMENT_PROMPTS, FILLER, LOOKUP_GROUNDED, LOOKUP_OPEN, STANDARD_PROMPT
from .ratios import ratio_lines
from .stats import median, paired_ratios, percentile, ratio, ratio_stats, rotate
from .worker import Worker, WorkerError
from . import serving, transcription

SECTIONS = ("meta", "binding_overhead", "official", "backend_parity", "greedy_agreement", "streaming_cost",
            "import_footprint", "gguf_load", "physical_limit", "concurrency", "serve", "lookup", "speculative",
            "whisper", "ratios")
ENGINE_SECTIONS = ("binding_overhead", "official", "backend_parity", "greedy_agreement", "streaming_cost",
                   "concurrency", "lookup", "speculative")
GENAI_PA = "genai[PA]"
GENAI_SDPA = "genai[SDPA]"
LOOKUP_OV = "ovgenai_c[bundled+lookup]"
GENAI_LOOKUP = "genai[lookup]"
LOOKUP_FIELDS = {"num_assistant_tokens": 5, "max_ngram_size": 3}  # the lookup section's config
LOOKUP_TARGETS = {"input_grounded": 1.8, "open_ended": 0.98}  # tokens/s over GenAI's default, at least
# --lookup-exact: batch-invariant kernels, so a several-token verification computes what one-token steps do
LOOKUP_EXACT = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0", "KV_CACHE_PRECISION": "f32"}
GENAI_PA_EXACT = "genai[PA f32]"
SPEC_OV = "ovgenai_c[bundled+draft]"
GENAI_SPEC = "genai[draft]"
SPEC_FIELDS = {"num_assistant_tokens": 4}  # the speculative section's config


class Settings:
    """Repetitions and sizes of every section (--quick: minimal), with the command line's overrides."""

    def __init__(self, quick: bool, args: argparse.Namespace) -> None:
        self.quick = quick
        if quick:
            self.warmup, self.overhead_reps, self.overhead_out = 1, 2, 8
            self.official_reps, self.official_out = 2, 8
            self.prompt_lens, self.out_lens, self.parity_reps = [16, 64], [8], 1
            self.agree_prompts, self.agree_tokens = 2, 16
            self.double_tokens, self.double_reps = 2000, 2
            self.stream_out, self.stream_reps = 16, 1
            self.import_reps, self.load_reps = 1, 1
            self.gguf_rounds, self.gguf_tokens = 1, 8
            self.conc_threads, self.conc_requests, self.conc_out, self.conc_reps = 2, 1, 8, 1
            self.bw_mb, self.bw_reps = 64, 3
            self.serve_levels, self.serve_per_client, self.serve_out, self.serve_rounds = [1, 2, 4, 8], 1, 8, 1
            self.serve_sequential = 2
            self.lookup_reps, self.lookup_out = 1, 16
            self.whisper_rounds = 1
        else:
            self.warmup, self.overhead_reps, self.overhead_out = 2, 12, 128
            self.official_reps, self.official_out = 10, 64
            self.prompt_lens, self.out_lens, self.parity_reps = [16, 256, 1024], [32, 128], 10
            self.agree_prompts, self.agree_tokens = 8, 64
            self.double_tokens, self.double_reps = 20000, 5
            self.stream_out, self.stream_reps = 64, 2
            self.import_reps, self.load_reps = 5, 2
            self.gguf_rounds, self.gguf_tokens = 5, 32
            self.conc_threads, self.conc_requests, self.conc_out, self.conc_reps = 2, 3, 64, 2
            self.bw_mb, self.bw_reps = 512, 8
            self.serve_levels, self.serve_per_client, self.serve_out, self.serve_rounds = [1, 2, 4, 8], 2, 64, 3
            self.serve_sequential = 4
            self.lookup_reps, self.lookup_out = 4, 192
            self.whisper_rounds = 5
        if getattr(args, "whisper_rounds", None) is not None:
            self.whisper_rounds = max(1, args.whisper_rounds)
        self.serve_parallel: Optional[int] = getattr(args, "serve_parallel", None)
        if getattr(args, "serve_rounds", None) is not None:
            self.serve_rounds = max(1, args.serve_rounds)
        if getattr(args, "serve_per_client", None) is not None:
            self.serve_per_client = max(1, args.serve_per_client)
        if getattr(args, "serve_levels", None):
            self.serve_levels = sorted({max(1, int(x)) for x in args.serve_levels.split(",")} | {1})
        if args.reps is not None:
            self.overhead_reps = self.parity_reps = self.stream_reps = self.double_reps = max(1, args.reps)
            self.official_reps = self.lookup_reps = max(1, args.reps)
        if args.prompt_lens:
            self.prompt_lens = [int(x) for x in args.prompt_lens.split(",")]
        if args.out_lens:
            self.out_lens = [int(x) for x in args.out_lens.split(",")]
        if args.threads is not None:
            self.conc_threads = max(1, args.threads)

    def as_dict(self) -> Dict[str, Any]:
        return {k: v for k, v in vars(self).items()}



class Bench:
    """One benchmark run over the engines found for ``args``."""

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
        self.worker_envs: Dict[str, Dict[str, str]] = {}  # a worker's own environment, when not self.env()

    # --- plumbing ---
    def env(self) -> Dict[str, str]:
        return worker_env(self.oracle_dir)

    def start(self, name: str, spec: Dict[str, Any]) -> Optional[Worker]:
        try:
            w = Worker(name, spec, self.worker_envs.get(name) or self.env(), self.logdir, self.args.timeout)
        except WorkerError as exc:
            self.engine_errors[name] = str(exc)
            say(f"engine {name} unavailable: {exc}")
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
            say(str(exc))
            if w.proc.poll() is None:
                return None
            self.workers.pop(name, None)
            self.crashes.setdefault(name, []).append(f"{op}: {exc}")
            if len(self.crashes[name]) > 1 or name not in getattr(self, "specs", {}):
                self.engine_errors[name] = str(exc)
                return None
            say(f"restarting {name} once")  # e.g. its library was rebuilt in place under it
            if self.start(name, self.specs[name]) is None:
                return None
            try:
                return self.workers[name].call(op, **req)
            except WorkerError as exc2:
                say(str(exc2))
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
    BUDGET_SHARE = {"import": 0.10, "gguf_load": 0.15, "load": 0.20, "binding_overhead": 0.34, "official": 0.44,
                    "backend_parity": 0.72, "greedy_agreement": 0.80, "streaming_cost": 0.88, "concurrency": 0.93,
                    "serve": 0.96, "lookup": 0.975, "speculative": 0.985, "whisper": 1.0}

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
        self.official_lib = self.find_official()
        self.libs = [(label, self.snapshot(label, path))
                     for label, path in find_libraries(a.library, self.official_lib)]
        self.meta()
        say(f"model {self.model}; engines: {[l for l, _ in self.libs] + ([] if self.oracle_error else [GENAI_PA, GENAI_SDPA])}")

        self.section("physical_limit", self.physical_limit_start)
        self.section("import_footprint", self.import_footprint)
        self.section("gguf_load", self.gguf_load)  # (before the engines' workers start: a quiet machine)
        if not self.args.only or set(self.args.only) & set(ENGINE_SECTIONS):
            self.load_engines()
        else:
            self.load_samples, self.specs = {}, {}
        self.section("binding_overhead", self.binding_overhead)
        self.section("official", self.official)
        self.section("backend_parity", self.backend_parity)
        self.section("greedy_agreement", self.greedy_agreement)
        self.section("streaming_cost", self.streaming_cost)
        self.section("concurrency", self.concurrency)
        self.section("serve", self.serve)
        self.section("lookup", self.lookup)
        self.section("speculative", self.speculative)
        self.section("whisper", self.whisper)
        self.section("physical_limit", self.physical_limit_end)
        self.finish_workers()
        self.report["meta"]["engine_errors"] = self.engine_errors
        self.report["meta"]["worker_crashes"] = self.crashes
        self.report["meta"]["trimmed_by_budget"] = self.trimmed  # section -> repetitions actually run
        self.report["meta"]["elapsed_s"] = time.perf_counter() - self.t_start
        self.report["meta"]["load_average_end"] = loadavg()
        self.report["ratios"] = ratio_lines(self.report, self.ov_engines() or [lbl for lbl, _ in self.libs],
                                            self.genai_engines() or [GENAI_PA, GENAI_SDPA])
        return self.report

    def find_official(self) -> Dict[str, Any]:
        """The official library to compare (official.discover()): ovgenai_c's own discovery, or ``--library``
        when it names libopenvino_genai_c."""
        explicit = self.args.library
        if explicit and not Path(explicit).name.startswith("libopenvino_genai_c"):
            return {"found": False, "note": f"--library {explicit} is the only library and not an official one"}
        found = discover_official(self.env(), explicit)
        say(f"official library: {found.get('description') or found.get('note')}")
        return found

    def section(self, name: str, fn: Any) -> None:
        if self.args.only and name not in self.args.only:
            self.report[name] = {"skipped": "not selected (--only)"}
            return
        say(f"{name} ({time.perf_counter() - self.t_start:.0f} s elapsed)")
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
            "load_average_start": loadavg(),
            "model": str(self.model), "model_bin_bytes": bin_path.stat().st_size if bin_path.is_file() else None,
            "device": a_device(self.args), "quick": self.s.quick, "settings": self.s.as_dict(),
            "machine": {"cpu": cpu, "cores": os.cpu_count(), "mem_bytes": mem, "python": platform.python_version(),
                        "platform": platform.platform()},
            "versions": versions,
            "ovgenai_c_libraries": [{"engine": l, "path": p} for l, p in self.libs],
            "official_library": self.official_lib,
            "oracle": {"available": self.oracle_error is None, "extra_path": str(self.oracle_dir) if self.oracle_dir
                       else None, "reason": self.oracle_error},
            "engines_described": {
                "ovgenai_c[bundled]": "ovgenai_c (cffi, C ABI) over the bundled backend libovgenai_c_bundled.so",
                "ovgenai_c[official]": "ovgenai_c (cffi, C ABI) over the official libopenvino_genai_c.so",
                GENAI_PA: "openvino_genai pybind, default properties (PagedAttention / continuous batching)",
                GENAI_SDPA: "openvino_genai pybind, ATTENTION_BACKEND=SDPA (stateful model)",
                GENAI_ARCHIVE: "openvino_genai pybind from the official archive's python/ folder (official section)",
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

    def gguf_load(self) -> None:
        gguf = find_gguf(self.model, getattr(self.args, "gguf", None))
        if gguf is None or not gguf.is_file():
            self.report["gguf_load"] = {"skipped": f"no GGUF file: {gguf} does not exist" if gguf else
                                        f"no single GGUF file beside {self.model} (pass --gguf FILE)"}
            return
        bundled = next((p for l, p in self.libs if l.endswith("[bundled]")), None)
        self.report["gguf_load"] = measure_gguf_load(gguf, a_device(self.args), self.s.gguf_rounds, self.env(),
                                                     bundled, self.oracle_error is None, self.s.gguf_tokens,
                                                     stop=lambda rep: self.over_budget("gguf_load", rep))

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
            for name in rotate(names, rep):
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
                        say(str(exc))
        self.load_samples = loads
        self.specs = specs

    def _gen_stats(self, runs: List[Dict[str, Any]]) -> Dict[str, Any]:
        ok = [r for r in runs if r]
        if not ok:
            return {"error": "no successful run"}
        st: Dict[str, Any] = {"runs": len(ok)}
        for k in ("ttft_ms", "tpot_ms", "throughput", "wall_s", "first_s", "n_in", "n_out", "generate_ms"):
            st[k] = median([r.get(k) for r in ok])
        # what the call costs outside the engine's own generate timer (binding, marshalling, thread hand-off)
        outside = [r["wall_s"] * 1000.0 - r["generate_ms"] for r in ok if r.get("generate_ms") and r.get("wall_s")]
        st["outside_engine_ms"] = median(outside)
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
            for e in rotate(engines, rep):
                runs[e].append(self.call(e, "gen", **req) or {})  # aligned by round, for paired ratios
        out: Dict[str, Any] = {}
        for e in engines:
            st = self._gen_stats(runs[e])
            ls = self.load_samples.get(e, [])
            st["load_s"] = median([x.get("load_s") for x in ls])
            st["load_s_samples"] = [x.get("load_s") for x in ls]
            st["engine_load_ms"] = median([r.get("engine_load_ms") for r in runs[e]])
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
        paired = {f"{ov} / {g}": {"ttft": ratio_stats(paired_ratios(runs[ov], runs[g], "ttft_ms")),
                                  "tpot": ratio_stats(paired_ratios(runs[ov], runs[g], "tpot_ms"))}
                  for ov in self.ov_engines() for g in self.genai_engines()}
        # ovgenai_c[official] against the installed pybind is a binding comparison only when both are the same GenAI
        # release (an archive of another release runs another GenAI): the ratio lines say so
        comparisons: Dict[str, Any] = {}
        found = self.official_lib or {}
        if OFFICIAL in self.ov_engines() and found.get("found"):
            kind = (found.get("info") or {}).get("kind") or "?"
            for g in self.genai_engines():
                version = (((self.load_samples.get(g) or [{}])[0]).get("versions") or {}).get("openvino_genai")
                comparisons[f"{OFFICIAL} / {g}"] = compare_versions(found.get("release"), version, kind)
        self.report["binding_overhead"] = {
            "request": {k: v for k, v in req.items()}, "reps": self.s.overhead_reps, "warmup": self.s.warmup,
            "engines": out, "paired": paired, "comparisons": comparisons,
            "what": ("ovgenai_c over the bundled backend vs openvino_genai pybind: this compares the binding AND the "
                     "engine (our C++ engine vs GenAI's); ovgenai_c[official] vs genai, when present and of the same "
                     "GenAI release (comparisons), is the pure binding cost; the binding's own per-token cost is isolated in streaming_cost (ABI double)."),
        }

    def official(self) -> None:
        """ovgenai_c over the official library against openvino_genai pybind (default properties, as the C API's
        pipeline has them), each in its own worker: paired rounds with no streamer (the per-call and per-token
        cost of ovgenai_c alone) and with a callback streamer."""
        found = self.official_lib
        if not found.get("found"):
            self.report["official"] = {"skipped": found["note"]}
            return
        ov = OFFICIAL
        sec: Dict[str, Any] = {"engine": ov, "library": found["description"], "library_path": found["path"],
                               "library_release": found.get("release"), "library_info": found.get("info")}
        g, archive_note = self.start_archive_pybind(found["path"])
        if ov not in self.workers:
            sec["skipped"] = f"{ov} did not start: {(self.engine_errors.get(ov) or '?').splitlines()[0]}"
        elif g not in self.workers:
            sec["skipped"] = (f"openvino_genai pybind is unavailable: "
                              f"{(self.oracle_error or self.engine_errors.get(g) or '?').splitlines()[0]}")
        if "skipped" in sec:
            self.report["official"] = sec
            self.stop_archive_pybind()
            return
        hello = (self.load_samples.get(g) or [{}])[0]
        pybind_version = (hello.get("versions") or {}).get("openvino_genai")
        sec["pybind"] = {"engine": g, "version": pybind_version, "module": hello.get("module"),
                         "from": "the official archive's python/ folder" if g == GENAI_ARCHIVE else
                                 "the installed openvino_genai", "note": archive_note}
        sec["comparison"] = compare_versions(found.get("release"), pybind_version,
                                             (found.get("info") or {}).get("kind") or "?")
        try:
            self.official_rounds(sec, ov, g)
        finally:
            self.stop_archive_pybind()

    def start_archive_pybind(self, library_path: str) -> Tuple[str, Optional[str]]:
        """The pybind engine to compare the official library with: the archive's own openvino_genai when the
        archive ships one and it starts (its own worker, GENAI_ARCHIVE), else genai[PA]; and a note when the
        archive's did not start."""
        env = archive_pybind_env(library_path, self.env())
        if env is None or self.args.no_genai:
            return GENAI_PA, None
        spec = {"engine": "genai", "model": str(self.model), "device": a_device(self.args)}
        self.worker_envs[GENAI_ARCHIVE] = env
        self.specs[GENAI_ARCHIVE] = spec
        w = self.start(GENAI_ARCHIVE, spec)
        if w is None:
            why = (self.engine_errors.get(GENAI_ARCHIVE) or "?").splitlines()[0]
            return GENAI_PA, f"the archive's own openvino_genai did not start ({why}); compared with the installed one"
        self.load_samples[GENAI_ARCHIVE] = [{**w.hello, "spawn_to_ready_s": w.spawn_to_ready_s}]
        return GENAI_ARCHIVE, None

    def stop_archive_pybind(self) -> None:
        """The archive's pybind worker serves the official section only."""
        w = self.workers.pop(GENAI_ARCHIVE, None)
        if w is not None:
            w.quit()

    def official_rounds(self, sec: Dict[str, Any], ov: str, g: str) -> None:
        """The paired rounds of the official section, ``ov`` against ``g``, with and without a streamer."""
        req = {"prompt": STANDARD_PROMPT, "max_new_tokens": self.s.official_out, "ignore_eos": True, "fresh": True}
        modes = ["none", "callback"]
        for e in (ov, g):
            self.call(e, "gen", **req, stream="none")  # warm (again, when binding_overhead ran)
        runs: Dict[Tuple[str, str], List[Dict[str, Any]]] = {(e, m): [] for e in (ov, g) for m in modes}
        rounds = 0
        for rep in range(self.s.official_reps):
            if self.over_budget("official", rep):
                break
            rounds += 1
            for m in rotate(modes, rep):
                for e in rotate([ov, g], rep):
                    runs[(e, m)].append(self.call(e, "gen", **req, stream=m) or {})  # aligned by round
        out: Dict[str, Any] = {}
        for m in modes:
            stats_by_engine = {e: self._gen_stats(runs[(e, m)]) for e in (ov, g)}
            a, b = stats_by_engine[ov].get("outside_engine_ms"), stats_by_engine[g].get("outside_engine_ms")
            out[m] = {"engines": stats_by_engine,
                      "paired": {k: ratio_stats(paired_ratios(runs[(ov, m)], runs[(g, m)], f"{k}_ms"))
                                 for k in ("ttft", "tpot")},
                      "outside_engine_ms_over_pybind": (a - b) if a is not None and b is not None else None}
        sec.update({"request": req, "reps": rounds, "modes": out,
                    "what": ("the same GenAI C++ library under both bindings (when like-for-like): the difference is "
                             "the binding's own cost; mode none = no streamer (on the official library ovgenai_c then "
                             "installs no callback either, as pybind), callback = a Python streamer on both")})
        self.report["official"] = sec

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
                for e in rotate(engines, k):
                    r = self.call(e, "gen", prompt=prompts[L]["text"], max_new_tokens=O, ignore_eos=True, fresh=True)
                    runs.setdefault((e, L, O), []).append(r or {})
                k += 1
        table = []
        pooled: Dict[str, Dict[str, List[float]]] = {}
        pooled_decode: Dict[str, Dict[str, List[float]]] = {}
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
                        "ttft": ratio(a.get("ttft_ms"), b.get("ttft_ms")),
                        "tpot": ratio(a.get("tpot_ms"), b.get("tpot_ms"))}
                    pr = {m: paired_ratios(runs.get((ov, L, O), []), runs.get((g, L, O), []), f"{m}_ms")
                          for m in ("ttft", "tpot")}
                    row.setdefault("paired", {})[tag] = {m: ratio_stats(v) for m, v in pr.items()}
                    for m, v in pr.items():
                        pooled.setdefault(tag, {}).setdefault(m, []).extend(v)
            table.append(row)
        self.report["backend_parity"] = {"reps": self.s.parity_reps, "cells": table,
                                         "pooled": {tag: {m: ratio_stats(v) for m, v in d.items()}
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
            for e in rotate(engines, i):
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

                so = build_double(cache_dir() / "abi_double")
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
                        med = {m: median(v) for m, v in r["times_s"].items()}
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
            for e in rotate(engines, rep):
                for m in rotate(modes[e], k):
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
            for mode in rotate(["shared", "separate"], rep):
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
                         "p50_latency_s": percentile(lat, 0.5), "p95_latency_s": percentile(lat, 0.95),
                         "requests": len(lat),
                         "errors": [x for r in rs for x in r["errors"]][:3],
                         "process_peak_rss_kb": max((r.get("hwm_kb") or 0) for r in rs) if rs else None}
        self.report["concurrency"] = out

    def serve(self) -> None:
        """``ovgenai-c serve`` (a child process, HTTP streaming clients) against openvino_genai's
        ContinuousBatchingPipeline in-process (its own worker) at each concurrency level, and ovgenai_c one request at
        a time in-process; every round runs every system at every level, in rotating order (serving.py)."""
        s = self.s
        lib = next((p for l, p in self.libs if l.endswith("[bundled]")), None) or \
            (self.libs[0][1] if self.libs else None)
        dev = a_device(self.args)
        extra = ["--no-cache"]  # the engine's default attention (PagedAttention), as GenAI's CB; no compiled cache
        if dev != "CPU":
            extra += ["--device", dev]
        message = f"Request {{i:05d}}: {serving.SERVE_PROMPT}"
        sec: Dict[str, Any] = {"levels": s.serve_levels, "top_level": max(s.serve_levels),
                               "requests_per_client": s.serve_per_client, "max_tokens": s.serve_out,
                               "rounds_planned": s.serve_rounds, "prompt": message, "targets": serving.TARGETS,
                               "how": ("server: `ovgenai-c serve` in a child process on 127.0.0.1, N client threads "
                                       "streaming /v1/chat/completions (SSE parsed; TTFT = first content chunk; tokens "
                                       "= usage); genai[CB]: openvino_genai ContinuousBatchingPipeline in its own "
                                       "worker, N requests added together and stepped; sequential: ovgenai_c "
                                       "LLMPipeline in-process, one request at a time. Greedy, model EOS, chat "
                                       "template, a per-request number in every prompt (no warm prefix).")}
        workers: Dict[str, Worker] = {}
        server: Optional[serving.ServerProcess] = None
        try:
            server = serving.ServerProcess(self.model, lib, self.env(), self.logdir / "serve.log", self.args.timeout,
                                           s.serve_parallel, extra)
            sec["server"] = {"command": server.command, "ready_s": server.ready_s, "library": lib}
            sec["server_scheduling"] = server.scheduling()
            specs = {serving.SEQUENTIAL: {"engine": "ovgenai_c", "model": str(self.model), "device": dev,
                                          "library": lib}}
            if self.oracle_error is None:
                specs[serving.GENAI_CB] = {"engine": "genai_cb", "model": str(self.model), "device": dev}
            else:
                sec["genai_cb_skipped"] = self.oracle_error
            for name, spec in specs.items():
                try:
                    workers[name] = Worker(name.replace(" ", "_").replace(",", ""), spec, self.env(), self.logdir,
                                           self.args.timeout)
                except WorkerError as exc:
                    sec.setdefault("engine_errors", {})[name] = str(exc)
            base = server.url + "/v1"
            index = [0]

            def next_message(_i: int) -> str:
                index[0] += 1
                return message.format(i=index[0] % 100000)

            # warm each system once (the first request of a fresh process pays for kernel preparation)
            serving.http_load(base, 1, 1, s.serve_out, next_message, self.args.timeout)
            if serving.GENAI_CB in workers:
                workers[serving.GENAI_CB].call("serve_load", clients=1, per_client=1, max_new_tokens=s.serve_out,
                                               message=message, first_index=90000)
            if serving.SEQUENTIAL in workers:
                workers[serving.SEQUENTIAL].call("gen", prompt=serving.SERVE_PROMPT, max_new_tokens=s.serve_out,
                                                 stream="callback", fresh=True)
            rounds: List[Dict[str, Dict[str, Dict[str, Any]]]] = []
            k = 0
            for rep in range(s.serve_rounds):
                if self.over_budget("serve", rep):
                    break
                say(f"serve: round {rep + 1} of {s.serve_rounds}")
                rnd: Dict[str, Dict[str, Dict[str, Any]]] = {}
                systems = [serving.SERVER] + [n for n in (serving.GENAI_CB, serving.SEQUENTIAL) if n in workers]
                for lv in s.serve_levels:
                    for name in rotate(systems, k):
                        k += 1
                        if name == serving.SERVER:
                            cell = serving.http_load(base, lv, s.serve_per_client, s.serve_out, next_message,
                                                     self.args.timeout)
                        elif name == serving.GENAI_CB:
                            r = workers[name].call("serve_load", clients=lv, per_client=s.serve_per_client,
                                                   max_new_tokens=s.serve_out, message=message,
                                                   first_index=index[0] + 1)
                            index[0] += lv * s.serve_per_client
                            cell = serving.level_result(r["wall_s"], r["ttft_s"], r["tokens"])
                        else:
                            if "sequential" in rnd.get(name, {}):
                                continue  # one request at a time does not depend on the level: once per round
                            runs = [workers[name].call("gen", prompt=serving.SERVE_PROMPT, max_new_tokens=s.serve_out,
                                                       stream="callback", fresh=True)
                                    for _ in range(s.serve_sequential)]
                            cell = serving.level_result(sum(r["wall_s"] for r in runs),
                                                        [r.get("first_s") for r in runs],
                                                        [r.get("n_out") or 0 for r in runs])
                            rnd.setdefault(name, {})["sequential"] = cell
                            continue
                        rnd.setdefault(name, {})[str(lv)] = cell
                rounds.append(rnd)
            sec["rounds"] = rounds
            sec["systems"] = serving.summarise(rounds, s.serve_levels)
            sec["paired"] = serving.paired(rounds, max(s.serve_levels))
            sec["server_scheduling_end"] = server.scheduling()
        finally:
            if server is not None:
                server.stop()
            for w in workers.values():
                w.quit()
        self.report["serve"] = sec
    def bundled_and_genai(self, section: str) -> Optional[Tuple[str, str]]:
        """(the bundled library's path, GenAI's default engine) for a section that compares the two; None, with
        the section reported as skipped, when either is missing."""
        bundled = next((p for label, p in self.libs if label.endswith("[bundled]")), None)
        base = next((e for e in self.genai_engines() if e == GENAI_PA), None)
        if bundled is None or base is None:
            self.report[section] = {"skipped": "needs the bundled backend and openvino_genai (its default pipeline)"}
            return None
        return bundled, base

    def paired_rounds(self, section: str, engines: List[str], prompts: List[Tuple[str, str]],
                      request: Any) -> Tuple[Dict[Tuple[str, str], List[Dict[str, Any]]], int]:
        """Paired rounds of streamed answers: a warm-up answer from every engine (it compiles its kernels for the
        shapes of every kind of step), then per round every prompt answered by every engine back to back, in
        rotating order, until the section's repetitions or its share of the budget run out. ``request(engine,
        text)`` makes a "gen" request. Returns ({(engine, prompt key): results}, rounds); each result gains
        tokens_per_s (end to end) and decode_tokens_per_s (1000 / TPOT: no TTFT, so answers of different lengths
        compare too)."""
        for e in engines:
            self.call(e, "gen", **request(e, prompts[0][1]))
        runs: Dict[Tuple[str, str], List[Dict[str, Any]]] = {(e, k): [] for e in engines for k, _t in prompts}
        rounds = 0
        for rep in range(self.s.lookup_reps):
            if self.over_budget(section, rep):
                break
            rounds += 1
            for i, (key, text) in enumerate(prompts):
                for e in rotate(engines, rep + i):
                    r = self.call(e, "gen", **request(e, text)) or {}
                    if r.get("n_out") and r.get("wall_s"):
                        r["tokens_per_s"] = r["n_out"] / r["wall_s"]
                    if r.get("tpot_ms"):
                        r["decode_tokens_per_s"] = 1000.0 / r["tpot_ms"]
                    runs[(e, key)].append(r)
        return runs, rounds

    def stop_workers(self, names: Any) -> None:
        """Quit the named workers (a section's own engines)."""
        for name in names:
            w = self.workers.pop(name, None)
            if w is not None:
                w.quit()

    def lookup(self) -> None:
        """Prompt-lookup decoding: ovgenai_c over the bundled backend with prompt_lookup=True against GenAI's default
        pipeline (and GenAI's own prompt_lookup pipeline), end-to-end tokens/s of streamed answers to input-grounded
        prompts (the answer repeats the input) and open-ended ones, in paired rounds (every engine answers a prompt
        back to back, in rotating order)."""
        found = self.bundled_and_genai("lookup")
        if found is None:
            return
        bundled, base = found
        dev = a_device(self.args)
        exact = dict(LOOKUP_EXACT) if getattr(self.args, "lookup_exact", False) else {}
        specs = {LOOKUP_OV: {"engine": "ovgenai_c", "model": str(self.model), "device": dev, "library": bundled,
                             "properties": {"prompt_lookup": True, **exact}},
                 GENAI_LOOKUP: {"engine": "genai", "model": str(self.model), "device": dev,
                                "properties": {"prompt_lookup": True, **exact}}}
        if exact:  # GenAI's default pipeline with the same settings, in a worker of its own
            base = GENAI_PA_EXACT
            specs[base] = {"engine": "genai", "model": str(self.model), "device": dev, "properties": dict(exact)}
        for name, spec in specs.items():
            self.start(name, spec)
        engines = [e for e in (LOOKUP_OV, base, GENAI_LOOKUP) if e in self.workers]
        prompts = [("input_grounded", k, v) for k, v in LOOKUP_GROUNDED.items()] + \
                  [("open_ended", k, v) for k, v in LOOKUP_OPEN.items()]
        if self.s.quick:
            prompts = [prompts[0], prompts[len(LOOKUP_GROUNDED)]]

        def request(e: str, text: str) -> Dict[str, Any]:
            # the same prompt every round (a request number in front would derail a small model's answer); each
            # engine's PA prefix cache (GenAI's default, and the bundled one) then holds it after the warm-up alike
            req = {"prompt": text, "max_new_tokens": self.s.lookup_out, "stream": "callback"}
            if e in (LOOKUP_OV, GENAI_LOOKUP):
                req["lookup"] = LOOKUP_FIELDS
            return req

        runs, rounds = self.paired_rounds("lookup", engines, [(k, t) for _, k, t in prompts], request)
        self.stop_workers(specs)
        sec: Dict[str, Any] = {"config": LOOKUP_FIELDS, "max_new_tokens": self.s.lookup_out, "engines": engines,
                               "reps": rounds, "targets": LOOKUP_TARGETS, "properties": exact or "defaults",
                               "how": "end-to-end tokens/s (generated tokens / wall time of the streamed call, TTFT "
                                      "included); ratios are geometric means of per-round paired ratios; the prompt "
                                      "is the same every round, so every engine's prefix cache holds it after the "
                                      "warm-up"}
        per_prompt: Dict[str, Any] = {}
        pooled: Dict[str, Dict[str, List[float]]] = {}
        pooled_decode: Dict[str, Dict[str, List[float]]] = {}
        for kind, key, _text in prompts:
            row: Dict[str, Any] = {"kind": kind, "engines": {}}
            for e in engines:
                rs = [r for r in runs[(e, key)] if r]
                row["engines"][e] = {"tokens_per_s": median([r.get("tokens_per_s") for r in rs]),
                                     "ttft_ms": median([r.get("ttft_ms") for r in rs]),
                                     "tpot_ms": median([r.get("tpot_ms") for r in rs]),
                                     "n_out": median([r.get("n_out") for r in rs])}
            row["ratios"], row["decode_ratios"] = {}, {}
            for other in engines[1:]:
                tag = f"{LOOKUP_OV} / {other}"
                rs = paired_ratios(runs[(LOOKUP_OV, key)], runs[(other, key)], "tokens_per_s")
                row["ratios"][tag] = ratio_stats(rs)
                pooled.setdefault(kind, {}).setdefault(tag, []).extend(rs)
                ds = paired_ratios(runs[(LOOKUP_OV, key)], runs[(other, key)], "decode_tokens_per_s")
                row["decode_ratios"][tag] = ratio_stats(ds)
                pooled_decode.setdefault(kind, {}).setdefault(tag, []).extend(ds)
            same = [a.get("text") == b.get("text") for a, b in zip(runs[(LOOKUP_OV, key)], runs[(base, key)])
                    if a.get("text") is not None and b.get("text") is not None]
            row["same_text_as_genai_default"] = f"{sum(same)}/{len(same)}"
            per_prompt[key] = row
        sec["prompts"] = per_prompt
        sec["pooled"] = {kind: {tag: ratio_stats(rs) for tag, rs in tags.items()} for kind, tags in pooled.items()}
        sec["pooled_decode"] = {kind: {tag: ratio_stats(rs) for tag, rs in tags.items()}
                                for kind, tags in pooled_decode.items()}
        verdicts = {}
        for kind, target in LOOKUP_TARGETS.items():
            st = (sec["pooled"].get(kind) or {}).get(f"{LOOKUP_OV} / {base}")
            if st:
                lo = (st.get("ci95") or [st["geomean"]])[0]
                verdicts[kind] = ("ok" if st["geomean"] >= target else
                                  "under, within noise" if (st.get("ci95") or [0, 0])[1] >= target else "under")
                verdicts[kind + "_ci_low"] = lo
        sec["verdicts"] = verdicts
        self.report["lookup"] = sec

    def speculative(self) -> None:
        """Speculative decoding with a draft model (--draft-model, default: the model drafting for itself, which
        measures what each implementation's drafting and verification cost, not a speed-up): ovgenai_c over the
        bundled backend against GenAI's speculative pipeline with the same draft and config, and GenAI's default
        pipeline, end-to-end tokens/s of streamed answers in paired rounds."""
        found = self.bundled_and_genai("speculative")
        if found is None:
            return
        bundled, base = found
        dev = a_device(self.args)
        draft = str(getattr(self.args, "draft_model", None) or self.model)
        specs = {SPEC_OV: {"engine": "ovgenai_c", "model": str(self.model), "device": dev, "library": bundled,
                           "draft": {"path": draft}},
                 GENAI_SPEC: {"engine": "genai", "model": str(self.model), "device": dev, "draft": {"path": draft}}}
        for name, spec in specs.items():
            self.start(name, spec)
        engines = [e for e in (SPEC_OV, GENAI_SPEC, base) if e in self.workers]
        prompts = list(LOOKUP_OPEN.items()) + list(LOOKUP_GROUNDED.items())
        if self.s.quick:
            prompts = prompts[:1]

        def request(e: str, text: str) -> Dict[str, Any]:
            req = {"prompt": text, "max_new_tokens": self.s.lookup_out, "stream": "callback"}
            if e != base:
                req["lookup"] = SPEC_FIELDS  # (the assisting fields, as for prompt lookup)
            return req

        runs, rounds = self.paired_rounds("speculative", engines, prompts, request)
        self.stop_workers(specs)
        sec: Dict[str, Any] = {"config": SPEC_FIELDS, "draft": draft, "self_draft": draft == str(self.model),
                               "max_new_tokens": self.s.lookup_out, "engines": engines, "reps": rounds,
                               "how": "end-to-end tokens/s (generated tokens / wall time of the streamed call, TTFT "
                                      "included); ratios are geometric means of per-round paired ratios"}
        per_prompt: Dict[str, Any] = {}
        pooled: Dict[str, List[float]] = {}
        for key, _text in prompts:
            row: Dict[str, Any] = {"engines": {}, "ratios": {}}
            for e in engines:
                rs = [r for r in runs[(e, key)] if r]
                row["engines"][e] = {"tokens_per_s": median([r.get("tokens_per_s") for r in rs]),
                                     "n_out": median([r.get("n_out") for r in rs])}
            for other in engines[1:]:
                tag = f"{SPEC_OV} / {other}"
                rs = paired_ratios(runs[(SPEC_OV, key)], runs[(other, key)], "tokens_per_s")
                row["ratios"][tag] = ratio_stats(rs)
                pooled.setdefault(tag, []).extend(rs)
            same = [a.get("text") == b.get("text") for a, b in zip(runs[(SPEC_OV, key)], runs[(GENAI_SPEC, key)])
                    if a.get("text") is not None and b.get("text") is not None]
            row["same_text_as_genai_draft"] = f"{sum(same)}/{len(same)}"
            per_prompt[key] = row
        sec["prompts"] = per_prompt
        sec["pooled"] = {tag: ratio_stats(rs) for tag, rs in pooled.items()}
        self.report["speculative"] = sec

    def whisper(self) -> None:
        """ovgenai_c's WhisperPipeline (bundled backend) against openvino_genai's, each in its own worker, on the
        same IR and espeak-ng audio: real-time factor, time to first segment and time to first text (a streamed
        call) per clip, in paired rounds with a rotating order (transcription.py)."""
        s = self.s
        sec: Dict[str, Any] = {"how": transcription.HOW, "rounds_planned": s.whisper_rounds,
                               "target": transcription.TARGET}
        self.report["whisper"] = sec
        if not transcription.espeak_available():
            sec["skipped"] = "espeak-ng is not installed (apt-get install espeak-ng): no speech to transcribe"
            return
        if self.oracle_error is not None:
            sec["skipped"] = f"openvino_genai is not available: {self.oracle_error}"
            return
        if self.args.whisper_model:
            model = Path(self.args.whisper_model).resolve()
        else:
            from ovgenai_c.models import default_whisper_model

            model = default_whisper_model(progress=False)
        lib = next((p for l, p in self.libs if l.endswith("[bundled]")), None)
        if lib is None:
            sec["skipped"] = "no bundled backend library (scripts/build_backend.sh)"
            return
        sec.update({"model": str(model), "model_name": model.parent.name if model.name == "ir" else model.name,
                    "library": lib, "properties": {}})
        clips = {name: transcription.make_clip(name, text, cache_dir() / "whisper-audio")
                 for name, text in transcription.CLIPS.items()}
        sec["clips"] = {c: {k: v[k] for k in ("duration_s", "samples", "windows", "text")} for c, v in clips.items()}
        dev = a_device(self.args)
        specs = {transcription.OVGENAI_C: {"engine": "whisper_ovgenai_c", "model": str(model), "device": dev,
                                           "library": lib, "properties": {}},
                 transcription.GENAI: {"engine": "whisper_genai", "model": str(model), "device": dev,
                                       "properties": {}}}
        workers: Dict[str, Worker] = {}
        try:
            for name, spec in specs.items():
                try:
                    workers[name] = Worker(name.replace(" ", "_"), spec, self.env(), self.logdir, self.args.timeout)
                except WorkerError as exc:
                    sec.setdefault("engine_errors", {})[name] = str(exc)
            sec["load_s"] = {n: w.hello.get("load_s") for n, w in workers.items()}
            window = int(transcription.WINDOW_S * transcription.SAMPLE_RATE)
            for w in workers.values():  # warm-up: the first call of a fresh process prepares its kernels
                w.call("transcribe", audio=clips["short"]["npy"])
            rounds: List[Dict[str, Dict[str, Dict[str, Any]]]] = []
            k = 0
            for rep in range(s.whisper_rounds):
                if self.over_budget("whisper", rep):
                    break
                say(f"whisper: round {rep + 1} of {s.whisper_rounds}")
                rnd: Dict[str, Dict[str, Dict[str, Any]]] = {}
                for c, clip in clips.items():
                    for name in rotate(list(workers), k):
                        k += 1
                        full = workers[name].call("transcribe", audio=clip["npy"])
                        first = None
                        if clip["samples"] > window:
                            first = workers[name].call("transcribe", audio=clip["npy"], max_samples=window)["wall_s"]
                        streamed = workers[name].call("transcribe", audio=clip["npy"], stream=True)
                        rnd.setdefault(name, {})[c] = transcription.round_cell(clip, full["wall_s"], first,
                                                                               full["text"], streamed)
                rounds.append(rnd)
            sec["rounds"] = rounds
            sec["systems"] = transcription.summarise(rounds, list(clips))
            sec["paired"] = transcription.paired(rounds, list(clips))
            sec["transcripts_agree"] = transcription.transcripts_agree(rounds, list(clips))
        finally:
            for w in workers.values():
                w.quit()

    def finish_workers(self) -> None:
        for name in list(self.workers):
            self.workers.pop(name).quit()

    def close(self, failed: bool = False) -> Optional[Path]:
        """Kill the workers still running and remove the run's scratch folder (worker logs, the bundled backend's
        private copy, the double's model folder). The folder is kept, and returned, when the run ``failed`` (raised),
        an engine did not start or a worker crashed, or ``--keep-logs`` asks for it; otherwise None."""
        for w in list(self.workers.values()):
            w.kill()
        keep = failed or bool(self.engine_errors or self.crashes) or bool(getattr(self.args, "keep_logs", False))
        if keep:
            return self.logdir
        import shutil

        shutil.rmtree(self.logdir, ignore_errors=True)
        return None


def a_device(args: argparse.Namespace) -> str:
    """The device the engines run on (CPU unless --device says otherwise)."""
    return getattr(args, "device", None) or "CPU"

