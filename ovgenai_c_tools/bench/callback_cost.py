"""What the streamer callback costs a no-streamer generate() on a real model: the same prompt and token count,
interleaved, with (1) no callback at all (the C call with a NULL streamer, through the binding's own layer),
(2) the bundled backend's cancel-only callback (what ovgenai_c installs there without a streamer: Python is
called per token, nothing is detokenised) and (3) a text callback that discards the text (what the official
library gets without a streamer: every token detokenised and handed to Python).

    python3 -m ovgenai_c_tools.bench.callback_cost [--model IR] [--tokens 128] [--reps 8]

TPOT and TTFT are the library's own (perf metrics); ratios are to (1), paired per repetition. Only ratios from
one run mean anything on a loaded machine.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Dict, List

PROMPT = "Write a long story about a lighthouse keeper and the storms of one winter."


def measure(model_dir: Path, tokens: int, reps: int) -> Dict[str, Any]:
    import ovgenai_c
    from ovgenai_c._capi import llm_pipeline
    from ovgenai_c._streaming import StreamBridge

    modes = ("no_callback", "cancel_only", "text_callback")
    with ovgenai_c.LLMPipeline(model_dir, "CPU") as pipe:
        cfg = pipe.get_generation_config()
        cfg.update_generation_config(max_new_tokens=tokens, ignore_eos=True)
        prompt = PROMPT.encode()

        def run(mode: str) -> Any:
            if mode == "text_callback":
                return pipe.generate(PROMPT, cfg, streamer=lambda _t: None).perf_metrics
            if mode == "cancel_only":
                return pipe.generate(PROMPT, cfg).perf_metrics

            def call(s: Any) -> Any:  # on the owner thread, as every C call of the pipeline
                out = llm_pipeline.generate(s.capi, s.handle, cfg, StreamBridge(), streamable=False,
                                            cancel_only=False, prompt=prompt)
                return out.perf if out.native is None else out.native()[0]  # (the perf metrics are read on use)

            return pipe._call(call)

        for m in modes:
            run(m)  # warm
        tpot: Dict[str, List[float]] = {m: [] for m in modes}
        ttft: Dict[str, List[float]] = {m: [] for m in modes}
        for rep in range(reps):
            order = modes[rep % 3:] + modes[:rep % 3]
            for m in order:
                perf = run(m)
                tpot[m].append(perf.get_tpot().mean)
                ttft[m].append(perf.get_ttft().mean)
    base = "no_callback"
    out: Dict[str, Any] = {"library": ovgenai_c.library_info().get("kind"), "tokens": tokens, "reps": reps,
                           "tpot_ms": {m: statistics.median(v) for m, v in tpot.items()},
                           "ttft_ms": {m: statistics.median(v) for m, v in ttft.items()}}
    out["tpot_ratio_to_no_callback"] = {m: statistics.median(a / b for a, b in zip(tpot[m], tpot[base]))
                                        for m in modes}
    out["ttft_ratio_to_no_callback"] = {m: statistics.median(a / b for a, b in zip(ttft[m], ttft[base]))
                                        for m in modes}
    return out


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(Path.home() / ".cache/ovgenai_c/models/SmolLM2-135M-Instruct/ir"))
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=8)
    args = ap.parse_args(argv)
    print(json.dumps(measure(Path(args.model).expanduser(), args.tokens, args.reps), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
