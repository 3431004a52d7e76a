#!/usr/bin/env python3
"""Aggregate generation throughput at 1/2/4/8 concurrent in-process requests: continuous batching
(ovgenai_c.ContinuousBatchingPipeline, all requests added at once) against one request at a time (the same
requests one after the other on one LLMPipeline), side by side in one run (rounds alternate the two, so machine
load hits both alike; only the ratio means anything on a shared machine).

    python3 scripts/batching_throughput.py [MODEL_DIR] [--tokens 64] [--rounds 2] [--concurrency 1,2,4,8]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ovgenai_c import models  # noqa: E402
from ovgenai_c import ContinuousBatchingPipeline, GenerationConfig, LLMPipeline  # noqa: E402

PROMPTS = ["Tell me a story about a dragon.", "Explain how rain forms.", "Write a poem about the city at night.",
           "What should I pack for a hiking trip?", "Describe the game of chess.", "How do airplanes fly?",
           "Give me a recipe for pancakes.", "Why is the sky blue?"]


def batched(cb: ContinuousBatchingPipeline, prompts: List[str], config: GenerationConfig) -> "tuple[int, float]":
    t0 = time.perf_counter()
    results = cb.generate(prompts, [config] * len(prompts))
    return sum(len(r.tokens[0]) for r in results), time.perf_counter() - t0


def serial(pipe: LLMPipeline, prompts: List[str], config: GenerationConfig) -> "tuple[int, float]":
    t0 = time.perf_counter()
    tokens = 0
    for p in prompts:
        tokens += pipe.generate(p, config).perf_metrics.get_num_generated_tokens()
    return tokens, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", help="IR folder (default: the default model's)")
    ap.add_argument("--tokens", type=int, default=64, help="tokens per request (ignore_eos; default 64)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per concurrency (default 2)")
    ap.add_argument("--concurrency", default="1,2,4,8", help="comma-separated request counts (default 1,2,4,8)")
    args = ap.parse_args()
    model = args.model or str(models.default_model_dir() / "ir")
    config = GenerationConfig(max_new_tokens=args.tokens, ignore_eos=True)
    props = {"INFERENCE_PRECISION_HINT": "f32"}
    cb = ContinuousBatchingPipeline(model, None, "CPU", props)
    pipe = LLMPipeline(model, "CPU", ATTENTION_BACKEND="PA", **props)
    # warm-up: the first inference of each shape prepares OpenVINO's kernels
    batched(cb, PROMPTS[:2], GenerationConfig(max_new_tokens=4))
    serial(pipe, PROMPTS[:1], GenerationConfig(max_new_tokens=4))
    print(f"model {model}; {args.tokens} tokens per request; {args.rounds} rounds; aggregate tokens/s "
          "(median of rounds; batching and one-at-a-time alternate in every round)")
    print(f"{'requests':>8} {'batching':>10} {'one-at-a-time':>14} {'ratio':>7} {'shared steps':>13}")
    for n in (int(x) for x in args.concurrency.split(",")):
        prompts = [PROMPTS[i % len(PROMPTS)] for i in range(n)]
        rates_b, rates_s = [], []
        before = cb.get_metrics()
        for _ in range(args.rounds):
            tok, dt = batched(cb, prompts, config)
            rates_b.append(tok / dt)
            tok, dt = serial(pipe, prompts, config)
            rates_s.append(tok / dt)
        after = cb.get_metrics()
        b, s = statistics.median(rates_b), statistics.median(rates_s)
        shared = after["shared_steps"] - before["shared_steps"]
        steps = after["steps"] - before["steps"]
        print(f"{n:>8} {b:>10.1f} {s:>14.1f} {b / s:>7.2f} {shared:>6}/{steps:<6}")
    cb.close()
    pipe.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
