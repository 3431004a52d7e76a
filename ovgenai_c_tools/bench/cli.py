"""The command line of the benchmark: ``python scripts/bench.py``, ``python -m ovgenai_c_tools.bench`` and
``ovgenai-c bench --compare`` all call :func:`main` with the arguments after the command."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from .render import render
from .run import SECTIONS, Bench

DESCRIPTION = ("Side-by-side benchmarks: binding overhead, backend parity, streaming cost, import footprint, the "
               "memory-bandwidth limit, concurrency, serving and Whisper — in one run, one process tree, with "
               "interleaved repetitions.")


def build_parser() -> argparse.ArgumentParser:
    """The benchmark's argument parser."""
    p = argparse.ArgumentParser(prog="bench", description=DESCRIPTION,
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
    p.add_argument("--serve-parallel", type=int, metavar="N",
                   help="serve section: the server's --parallel (default: the server's own default)")
    p.add_argument("--serve-rounds", type=int, metavar="N", help="serve section: rounds (default 3, --quick 1)")
    p.add_argument("--serve-per-client", type=int, metavar="N",
                   help="serve section: requests each client sends back to back per level (default 2, --quick 1); "
                        "more makes each cell longer and its ratio steadier")
    p.add_argument("--serve-levels", metavar="LIST", help="serve section: comma-separated client counts "
                                                          "(default 1,2,4,8; 1 is always included)")
    p.add_argument("--whisper-rounds", type=int, metavar="N", help="whisper section: paired rounds (default 5, "
                                                                   "--quick 1)")
    p.add_argument("--gguf", metavar="FILE", help="gguf_load section: the GGUF file (default: the one beside the "
                                                   "model's IR folder, as the default model's cache keeps it)")
    p.add_argument("--whisper-model", metavar="DIR", help="whisper section: the Whisper IR folder (default: "
                                                          "ovgenai_c.models.default_whisper_model())")
    p.add_argument("--no-genai", action="store_true", help="do not run openvino_genai (ovgenai_c engines only)")
    p.add_argument("--no-fetch", action="store_true", help="never pip-fetch openvino_genai when it is missing")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a single request may take")
    p.add_argument("--budget", type=float, help="time budget in seconds: sections run fewer repetitions (at least "
                                                "one) once their share is used up (default 540, --quick 50; 0 = none)")
    p.add_argument("--lookup-exact", action="store_true",
                   help="lookup section: every engine with batch-invariant f32 settings (INFERENCE_PRECISION_HINT=f32, "
                        "DYNAMIC_QUANTIZATION_GROUP_SIZE=0, KV_CACHE_PRECISION=f32), under which prompt lookup "
                        "answers exactly what plain greedy decoding does: all engines then answer the same text")
    p.add_argument("--draft-model", metavar="DIR",
                   help="speculative section: the draft model's IR folder (default: the model itself, which measures "
                        "the cost of drafting and verifying rather than a speed-up)")
    p.add_argument("--keep-logs", action="store_true",
                   help="keep the run's scratch folder (the workers' logs) even when every engine ran without error "
                        "(it is always kept, and named in the report, when one did not)")
    p.add_argument("--no-snapshot", action="store_true", help="load the bundled backend in place instead of from a "
                                                                 "private copy made at start")
    p.add_argument("--only", help="comma-separated sections to run (others are reported as skipped): "
                                  + ", ".join(s for s in SECTIONS if s not in ("meta", "ratios")))
    p.add_argument("model_pos", nargs="?", metavar="MODEL", help="same as --model")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the benchmark with argv (default: sys.argv[1:]), print the report, write the JSON; 0 when the run
    completes, 2 for a usage error."""
    argv = list(sys.argv[1:] if argv is None else argv)
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
    completed = False
    try:
        report = bench.run()
        completed = True
    finally:
        kept = bench.close(failed=not completed)
        if kept is not None and not completed:
            print(f"bench: worker logs kept in {kept}", file=sys.stderr)
    report["meta"]["worker_logs"] = str(kept) if kept is not None else None
    text = render(report)
    print(text)
    out = Path(args.out)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"JSON written to {out}")
    return 0

