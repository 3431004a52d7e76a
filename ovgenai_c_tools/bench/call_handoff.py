"""Where a relayed generate() call's time outside the library's own generate timer goes, part by part: the Python
before the post, the hand-off to the owner thread, the C API's own work around GenAI's timer, the hand-off back
(the owner's end to the caller's return from its wait) and the Python after it. The owner's start and end come
from the relay (``ovgenai_relay_last_call_times``, the steady clock), the caller's marks from
``time.monotonic_ns`` — the same clock on Linux.

    python3 -m ovgenai_c_tools.bench.call_handoff [--model IR] [--library libopenvino_genai_c.so] [--tokens 64]
                                                  [--calls 40]

Medians (and means, which add up to the total) in microseconds over ``--calls`` back-to-back calls after three
warm-up calls. Wrapping the relay's post
and wait to take the marks adds a little to the Python parts; the hand-off parts are read from C.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

PROMPT = "Tell me a story about a cat."
PARTS = ("python_before_post", "handoff_to_owner", "c_api_outside_genai", "handoff_back", "python_after_wait")


def _same_clock() -> bool:
    """Whether time.monotonic_ns reads the clock the relay's steady_clock reads (CLOCK_MONOTONIC)."""
    return sys.platform.startswith("linux") and "CLOCK_MONOTONIC" in time.get_clock_info("monotonic").implementation


def measure(pipe: Any, tokens: int, calls: int, prompt: str = PROMPT) -> Dict[str, Any]:
    """The parts (medians, µs) of ``calls`` relayed ``pipe.generate(prompt)`` calls; calls that did not go through
    the relay (made before the owner was back in it) are left out and counted."""
    from ovgenai_c import _relay

    relay = pipe._state.owner.relay
    if relay is None:
        raise RuntimeError("this pipeline has no relay (the helper library is missing or OVGENAI_C_RELAY=0)")
    if not _same_clock():
        raise RuntimeError("the caller's and the relay's clocks are not known to be the same here (Linux only)")
    clock = time.monotonic_ns
    marks: Dict[str, int] = {}
    originals = {name: getattr(_relay.Relay, name) for name in ("post", "post_read", "wait", "wait_fd")}

    def before(name: str) -> Any:
        def post(self: Any, *a: Any) -> Any:
            marks["post"] = clock()
            return originals[name](self, *a)
        return post

    def after(name: str) -> Any:
        def wait(self: Any, *a: Any) -> Any:
            try:
                return originals[name](self, *a)
            finally:
                marks["back"] = clock()
        return wait

    rows: List[Dict[str, float]] = []
    missed = 0
    for name in ("post", "post_read"):
        setattr(_relay.Relay, name, before(name))
    for name in ("wait", "wait_fd"):
        setattr(_relay.Relay, name, after(name))
    try:
        for i in range(calls + 3):
            marks.clear()
            t0 = clock()
            res = pipe.generate(prompt, max_new_tokens=tokens, ignore_eos=True)
            t1 = clock()
            genai_us = res.perf_metrics.get_generate_duration().mean * 1e3
            times = relay.last_call_times()
            if i < 3:
                continue
            if "post" not in marks or "back" not in marks or times is None or not t0 <= times[0] <= t1:
                missed += 1
                continue
            started, ended = times
            rows.append({"total_outside": (t1 - t0) / 1e3 - genai_us,
                         "python_before_post": (marks["post"] - t0) / 1e3,
                         "handoff_to_owner": (started - marks["post"]) / 1e3,
                         "c_api_outside_genai": (ended - started) / 1e3 - genai_us,
                         "handoff_back": (marks["back"] - ended) / 1e3,
                         "python_after_wait": (t1 - marks["back"]) / 1e3})
    finally:
        for name, fn in originals.items():
            setattr(_relay.Relay, name, fn)
    if not rows:
        raise RuntimeError("no call went through the relay")
    keys = ("total_outside",) + PARTS
    return {"calls": len(rows), "not_relayed": missed, "tokens": tokens,
            "median_us": {k: round(statistics.median(r[k] for r in rows), 1) for k in keys},
            "mean_us": {k: statistics.fmean(r[k] for r in rows) for k in keys}}  # (the parts' means add up)


def probe_parser(module: str, doc: str) -> argparse.ArgumentParser:
    """The arguments every per-call probe takes: --model, --library, --tokens (this module's and cold_python's)."""
    ap = argparse.ArgumentParser(prog=f"python -m ovgenai_c_tools.bench.{module}", description=doc.split("\n")[0])
    ap.add_argument("--model", type=Path, default=None, help="model folder (default: the CLI's default model IR)")
    ap.add_argument("--library", default=None, help="a GenAI C library to run on (default: ovgenai_c's discovery)")
    ap.add_argument("--tokens", type=int, default=64)
    return ap


def model_or_default(model: Optional[Path]) -> Path:
    """``model``, or the CLI's default model IR."""
    if model is not None:
        return model
    from ovgenai_c import models

    return models.default_model_dir() / "ir"


def main(argv: Optional[List[str]] = None) -> int:
    ap = probe_parser("call_handoff", __doc__)
    ap.add_argument("--calls", type=int, default=40)
    args = ap.parse_args(argv)
    import ovgenai_c

    model = model_or_default(args.model)
    with ovgenai_c.LLMPipeline(model, "CPU", library=args.library) as pipe:
        out = measure(pipe, args.tokens, args.calls)
        out["library"] = pipe._library.kind
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
