"""Where generate() spends its time outside the C call: a micro-benchmark on the ABI double (whose generate is
near-instant), so everything measured is the binding's own per-call cost.

    python3 scripts/profile_generate_overhead.py [--calls 3000] [--profile]
    python3 scripts/profile_generate_overhead.py --model ~/.cache/ovgenai_c/models/SmolLM2-135M-Instruct/ir
                                                 [--library PATH] [--calls 300]

With --model the calls run on a real library (the bundled backend unless --library) and model, one new token
each; "over C" is then what matters: a call's total minus its C generate, per call.

Phases of one call (medians over --calls, in microseconds):
  before owner   generate() entry -> the owner thread starts the job (argument checks, config resolution and
                 validation, input preparation, the hand-off to the owner thread)
  owner pre-C    streamer struct, config materialisation (create + one setter per non-default field)
  C generate     ov_genai_llm_pipeline_generate itself (the double: microseconds)
  owner post-C   reading the results (two get_string calls, perf metrics: ~20 getters), frees
  after owner    the job is done -> generate() returns (wake-up of the caller, splitting results, DecodedResults)
``--profile`` adds a cProfile of the calling thread's side (the owner thread's share is the phases above).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import ovgenai_c  # noqa: E402
from ovgenai_c import _loader, pipeline  # noqa: E402

clock = time.perf_counter_ns
marks: Dict[str, int] = {}
c_time: List[int] = []


class TimedLib:
    """Proxy of a cffi library: times the C generate call, passes everything else through."""

    def __init__(self, lib: Any) -> None:
        self._lib = lib

    def __getattr__(self, name: str) -> Any:  # first lookup only: the result is cached as an attribute
        fn = getattr(self._lib, name)
        if name in ("ov_genai_llm_pipeline_generate", "ov_genai_llm_pipeline_generate_with_history"):
            inner = fn

            def fn(*a: Any) -> Any:
                marks["c0"] = clock()
                try:
                    return inner(*a)
                finally:
                    marks["c1"] = clock()
        setattr(self, name, fn)
        return fn


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--model", help="a real model folder (then the library is the bundled backend or --library)")
    ap.add_argument("--library", help="with --model: the GenAI C library to load")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="percall-"))
    try:
        return _measure(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(args: argparse.Namespace, tmp: Path) -> int:
    """The measurement itself; ``tmp`` holds the double and its model folder."""
    from abi_double.build import build_double
    from abi_double.controls import make_model_dir

    if args.model:
        lib = ovgenai_c.load_library(args.library) if args.library else _loader.open_library(
            str(next(p for p in _loader.bundled_candidates() if p.is_file())))
    else:
        lib = _loader.open_library(str(build_double(tmp / "double")))
    lib.lib = TimedLib(lib.lib)
    original = pipeline.LLMPipeline._run_generate

    def run_generate(self: Any, *a: Any, **k: Any) -> Any:
        marks["o0"] = clock()
        try:
            return original(self, *a, **k)
        finally:
            marks["o1"] = clock()

    pipeline.LLMPipeline._run_generate = run_generate  # type: ignore[assignment]
    if args.model:
        model = Path(args.model).expanduser()
    else:
        model = make_model_dir(tmp / "model")
        # an eos token, so the pipeline's own config is valid as it is (the double's files are empty)
        (model / "generation_config.json").write_text('{"eos_token_id": 2}')
    cases = {
        "pipeline config": {},
        "max_new_tokens=1": {"max_new_tokens": 1},
        "5 fields": {"max_new_tokens": 1, "temperature": 0.7, "top_p": 0.9, "do_sample": True, "rng_seed": 3},
    }
    with ovgenai_c.LLMPipeline(model, "CPU", library=lib) as pipe:
        if args.model:  # one new token per call with the pipeline's own config too
            cfg = pipe.get_generation_config()
            cfg.max_new_tokens = 1
            pipe.set_generation_config(cfg)
        for name, kw in cases.items():
            phases: Dict[str, List[int]] = {k: [] for k in ("total", "over C", "before owner", "owner pre-C",
                                                             "C generate", "owner post-C", "after owner")}
            warm = 20 if args.model else 200
            for i in range(args.calls + warm):
                t0 = clock()
                pipe.generate("hi", **kw)
                t1 = clock()
                if i < warm:
                    continue  # warm-up
                phases["total"].append(t1 - t0)
                phases["over C"].append(t1 - t0 - (marks["c1"] - marks["c0"]))
                phases["before owner"].append(marks["o0"] - t0)
                phases["owner pre-C"].append(marks["c0"] - marks["o0"])
                phases["C generate"].append(marks["c1"] - marks["c0"])
                phases["owner post-C"].append(marks["o1"] - marks["c1"])
                phases["after owner"].append(t1 - marks["o1"])
            print(f"{name}: " + ", ".join(f"{k} {statistics.median(v) / 1000:.1f}" for k, v in phases.items())
                  + " (median us)")
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.calls):
                pipe.generate("hi", max_new_tokens=1)
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    sys.exit(main())
