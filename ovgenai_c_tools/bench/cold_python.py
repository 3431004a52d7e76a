"""How much slower a fixed piece of Python runs right after an inference than warm, and whether waiting or spinning
first changes it: tells the caches that an inference evicts (what a pause does not bring back) from threads still
busy after it (what a pause would let finish). Part of the analysis of issue 17 item 6 (a generate() call's time
outside GenAI's timer, README "Where a relayed call's time outside GenAI's timer goes").

    python3 -m ovgenai_c_tools.bench.cold_python [--model IR] [--library libopenvino_genai_c.so] [--tokens 64]
                                                 [--rounds 25]

The pipeline is made, run and freed by this thread alone with the C API itself (no ovgenai_c Python runs between
the inference's end and the snippet). Each round times the snippet warm (right after a first run of it), and right
after a greedy generate of ``--tokens`` tokens with nothing between, after a 1 ms and a 5 ms sleep, and after a 1 ms
busy loop. Medians in microseconds, as JSON.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

PROMPT = b"Tell me a story about a cat."
CASES = ("warm", "right_after", "after_sleep_1ms", "after_sleep_5ms", "after_busy_1ms")


class _Result:
    pass


def snippet() -> int:
    """What a call's result handling does in kind: small objects, a dict, a text decode, attribute stores."""
    fields = {}
    for i in range(40):
        fields[i] = (i, str(i), [i])
    text = (b"hello world " * 20).decode("utf-8")
    r = _Result()
    r.text, r.fields = text, fields
    return len(r.text) + len(r.fields)


def _pause(case: str) -> None:
    if case == "after_sleep_1ms":
        time.sleep(0.001)
    elif case == "after_sleep_5ms":
        time.sleep(0.005)
    elif case == "after_busy_1ms":
        end = time.perf_counter() + 0.001
        while time.perf_counter() < end:
            pass


def measure(generate: Callable[[], None], rounds: int) -> Dict[str, Any]:
    """Medians (µs) of the snippet per case over ``rounds`` rounds (cases in rotating order); ``generate`` runs one
    inference."""
    times: Dict[str, List[int]] = {c: [] for c in CASES}
    clock = time.perf_counter_ns
    for _ in range(2):
        generate()
    for rnd in range(rounds):
        order = CASES[rnd % len(CASES):] + CASES[:rnd % len(CASES)]
        for case in order:
            if case == "warm":
                snippet()
            else:
                generate()
                _pause(case)
            t = clock()
            snippet()
            times[case].append(clock() - t)
    medians = {c: round(statistics.median(v) / 1e3, 1) for c, v in times.items()}
    return {"rounds": rounds, "median_us": medians,
            "right_after_over_warm": round(medians["right_after"] / max(medians["warm"], 0.1), 2)}


def run(model: Path, library: Optional[str], tokens: int, rounds: int) -> Dict[str, Any]:
    """Loads ``library`` (default: ovgenai_c's discovery), makes a pipeline on ``model`` with the C API and
    measures; the pipeline is freed by this thread."""
    import ovgenai_c

    lib = ovgenai_c.load_library(library)
    ffi, c = lib.ffi, lib.lib
    made = ffi.new("ov_genai_llm_pipeline**")
    lib.check(c.ov_genai_llm_pipeline_create(str(model).encode(), b"CPU", 0, made), "ov_genai_llm_pipeline_create")
    cfg_out = ffi.new("ov_genai_generation_config**")
    lib.check(c.ov_genai_generation_config_create(cfg_out), "ov_genai_generation_config_create")
    pipe, cfg = made[0], cfg_out[0]
    try:
        lib.check(c.ov_genai_generation_config_set_max_new_tokens(cfg, tokens), "set_max_new_tokens")
        lib.check(c.ov_genai_generation_config_set_ignore_eos(cfg, True), "set_ignore_eos")

        def generate() -> None:
            out = ffi.new("ov_genai_decoded_results**")
            lib.check(c.ov_genai_llm_pipeline_generate(pipe, PROMPT, cfg, ffi.NULL, out), "generate")
            c.ov_genai_decoded_results_free(out[0])

        result = measure(generate, rounds)
    finally:
        c.ov_genai_generation_config_free(cfg)
        c.ov_genai_llm_pipeline_free(pipe)
    result.update(tokens=tokens, library=lib.kind)
    return result


def main(argv: Optional[List[str]] = None) -> int:
    from .call_handoff import model_or_default, probe_parser

    ap = probe_parser("cold_python", __doc__ or "")
    ap.add_argument("--rounds", type=int, default=25)
    args = ap.parse_args(argv)
    print(json.dumps(run(model_or_default(args.model), args.library, args.tokens, args.rounds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
