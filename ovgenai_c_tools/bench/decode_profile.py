"""Where one decode step goes: OpenVINO's own per-node counters (PERF_COUNT) of a PagedAttention step at a given
context, and the bundled engine's time outside ``infer()`` per step (its raw perf series).

    python3 -m ovgenai_c_tools.bench.decode_profile [--model IR] [--context 1024] [--steps 32] [--threads 2]
                                                   [--reps 3] [--only nodes|engine|forms]

1. ``nodes``: the model as a PagedAttention graph (openvino's ``paged_attention_transformation``, the pass the
   bundled PA backend and GenAI run too), compiled for CPU with PERF_COUNT, a ``--context``-token prefill, then
   ``--steps`` one-token decode steps; per node type the median real time of a step (OpenVINO's counters), the
   infer() wall time, and what the nodes do not account for (plugin overhead between them).
2. ``engine``: the bundled backend (ovgenai_c over the bundled library, ATTENTION_BACKEND=PA) generating
   ``--steps`` tokens after the same context; per step the time between two new tokens, the infer() time inside
   it (token_infer_durations) and the sampler's (sampling_durations): the rest is host work outside infer()
   (logits read, stop checks, block tables, streaming) — what is not the model.
3. ``forms``: the PA engine's static one-token form (OVGENAI_C_STATIC_DECODE) on and off, two pipelines in one
   process, alternating ``--reps`` generations of ``--steps`` tokens after the same context: TPOT medians and
   their ratio, whether the texts are the same, each pipeline's load time.
Run on a loaded machine, only the shares within one run mean anything.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List


def _model_dir(path: str) -> Path:
    """``path``, else the default model's IR folder in the cache."""
    return Path(path).expanduser() if path else \
        Path.home() / ".cache" / "ovgenai_c" / "models" / "SmolLM2-135M-Instruct" / "ir"


def profile_nodes(model_dir: Path, context: int, steps: int, threads: int) -> Dict[str, Any]:
    """Per-node-type times of one PA decode step (openvino's counters), medians over ``steps``."""
    import numpy as np
    import openvino as ov
    from openvino._offline_transformations import paged_attention_transformation

    core = ov.Core()
    model = core.read_model(str(model_dir / "openvino_model.xml"))
    paged_attention_transformation(model)
    config = {"PERF_COUNT": "YES", "INFERENCE_NUM_THREADS": threads, "KV_CACHE_PRECISION": "u8"}
    compiled = core.compile_model(model, "CPU", config)
    req = compiled.create_infer_request()
    caches = [p for p in compiled.inputs if p.get_any_name().startswith(("key_cache.", "value_cache."))]
    block = None
    for p in caches:  # [blocks, heads, block_size, head_size] (key/value) with the block count left dynamic
        shape = p.get_partial_shape()
        if p.get_any_name().startswith("value_cache.") and shape.rank.get_length() == 4:
            block = shape[2].get_length()
    block = block or 32
    nblocks = (context + steps) // block + 2
    for p in caches:
        dims = [nblocks] + [d.get_length() for d in list(p.get_partial_shape())[1:]]
        req.set_tensor(p, ov.Tensor(p.get_element_type(), dims))

    def feed(ids: List[int], past: int) -> float:
        n = len(ids)
        used = (past + n + block - 1) // block
        inputs = {"input_ids": np.array(ids, np.int64), "position_ids": np.arange(past, past + n, dtype=np.int64),
                  "past_lens": np.array([past], np.int32), "subsequence_begins": np.array([0, n], np.int32),
                  "block_indices": np.arange(used, dtype=np.int32), "block_indices_begins": np.array([0, used], np.int32),
                  "max_context_len": np.array(past + n, np.int32)}
        names = {p.get_any_name() for p in compiled.inputs}
        for k, v in inputs.items():
            if k in names:
                req.set_tensor(k, ov.Tensor(v))
        t = time.perf_counter()
        req.infer()
        return time.perf_counter() - t

    def totals(done: int) -> Dict[tuple, float]:
        # the CPU plugin reports each node's mean over the request's inferences so far: times the count
        return {(i.node_type, i.node_name): i.real_time.total_seconds() * 1e6 * done for i in req.profiling_info}

    rng = np.random.default_rng(0)
    feed([int(x) for x in rng.integers(10, 1000, context)], 0)
    done = 1
    last = totals(done)
    walls: List[float] = []
    by_type: Dict[str, List[float]] = {}
    by_node: Dict[str, List[float]] = {}
    for k in range(steps):
        walls.append(feed([int(rng.integers(10, 1000))], context + k))
        done += 1
        now = totals(done)
        per_type: Dict[str, float] = {}
        for (kind, name), total in now.items():
            us = total - last.get((kind, name), 0.0)  # this step's own time
            per_type[kind] = per_type.get(kind, 0.0) + us
            by_node.setdefault(f"{kind}:{name}", []).append(us)
        last = now
        for t, us in per_type.items():
            by_type.setdefault(t, []).append(us)
    types = {t: statistics.median(v) for t, v in by_type.items()}
    nodes_us = sum(types.values())
    wall_us = statistics.median(walls) * 1e6
    top = sorted(((statistics.median(v), n) for n, v in by_node.items()), reverse=True)[:12]
    return {"context": context, "steps": steps, "threads": threads, "block_size": block,
            "infer_wall_us": wall_us, "nodes_total_us": nodes_us,
            "outside_nodes_us": wall_us - nodes_us,
            "by_type_us": dict(sorted(types.items(), key=lambda kv: -kv[1])),
            "by_type_share": {t: us / wall_us for t, us in sorted(types.items(), key=lambda kv: -kv[1])},
            "top_nodes_us": [[n, us] for us, n in top]}


def profile_engine(model_dir: Path, context: int, steps: int, reps: int) -> Dict[str, Any]:
    """The bundled PA engine: per decode step, time between tokens vs infer() vs sampling (raw perf series)."""
    import ovgenai_c

    with ovgenai_c.LLMPipeline(model_dir, "CPU", ATTENTION_BACKEND="PA") as pipe:
        text = _context_text(pipe.get_tokenizer(), context)
        gaps: List[float] = []
        infers: List[float] = []
        samplings: List[float] = []
        for _ in range(reps + 1):
            res = pipe.generate(text, max_new_tokens=steps, ignore_eos=True, apply_chat_template=False)
            raw = res.perf_metrics.raw_metrics
            times = raw.m_new_token_times
            if _ == 0:
                continue  # warm-up
            # decode steps only (not the first token); the token times are milliseconds, the durations microseconds
            gaps += [(b - a) * 1000.0 for a, b in zip(times[1:], times[2:])]
            infers += raw.token_infer_durations[2:]
            samplings += raw.sampling_durations[2:]
        gap, inf, smp = statistics.median(gaps), statistics.median(infers), statistics.median(samplings)
        return {"context_tokens": res.perf_metrics.get_num_input_tokens(), "steps": steps, "reps": reps,
                "step_us": gap, "infer_us": inf, "sampling_us": smp, "outside_infer_us": gap - inf,
                "outside_infer_share": (gap - inf) / gap if gap else None,
                "host_besides_sampling_us": gap - inf - smp}


def _context_text(tok: Any, context: int) -> str:
    """A plain text of at least ``context`` tokens."""
    words = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing "
             "matches at dawn near old rivers ").split()
    text, n = "", 0
    while n < context:
        text += " ".join(words) + " "
        n = len(list(tok.encode(text).input_ids.data[0]))
    return text


def profile_forms(model_dir: Path, context: int, steps: int, reps: int) -> Dict[str, Any]:
    """The one-token form on ÷ off: TPOT (engine-reported) over alternating generations, text equality, load."""
    import ovgenai_c

    pipes: Dict[str, Any] = {}
    loads: Dict[str, float] = {}
    try:
        for name, flag in (("on", "YES"), ("off", "NO")):
            t = time.perf_counter()
            pipes[name] = ovgenai_c.LLMPipeline(model_dir, "CPU", ATTENTION_BACKEND="PA",
                                                OVGENAI_C_STATIC_DECODE=flag)
            loads[name] = time.perf_counter() - t
        text = _context_text(pipes["on"].get_tokenizer(), context)
        tpots: Dict[str, List[float]] = {"on": [], "off": []}
        texts: Dict[str, set] = {"on": set(), "off": set()}
        for rep in range(reps + 1):
            for name in (("on", "off") if rep % 2 else ("off", "on")):
                res = pipes[name].generate(text, max_new_tokens=steps, ignore_eos=True, apply_chat_template=False)
                if rep:  # the first round warms both up
                    tpots[name].append(res.perf_metrics.get_tpot().mean)
                    texts[name].add(str(res))
    finally:
        for p in pipes.values():
            p.close()
    on, off = statistics.median(tpots["on"]), statistics.median(tpots["off"])
    return {"context": context, "steps": steps, "reps": reps, "tpot_ms": {"on": on, "off": off},
            "tpot_on_over_off": on / off, "min_ratio": min(tpots["on"]) / min(tpots["off"]),
            "same_text": texts["on"] == texts["off"], "load_s": loads}


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", choices=("nodes", "engine", "forms"))
    args = ap.parse_args(argv)
    model = _model_dir(args.model)
    out: Dict[str, Any] = {}
    if args.only in (None, "nodes"):
        out["nodes"] = profile_nodes(model, args.context, args.steps, args.threads)
    if args.only in (None, "engine"):
        out["engine"] = profile_engine(model, args.context, args.steps, args.reps)
    if args.only in (None, "forms"):
        out["forms"] = profile_forms(model, args.context, args.steps, args.reps)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
