"""The gguf_load section: a GGUF file as ``models_path``, ovgenai_c over the bundled backend against openvino_genai,
side by side. Each sample is a fresh interpreter that imports its module, times ``LLMPipeline(gguf, device)`` (the
file read, the model and tokenizer built and compiled) and the first greedy answer, and reports its peak RSS; the
two engines alternate first in each round, and the ratios are paired per round."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from .stats import median, paired_ratios, ratio_stats

PROMPT = "What is the capital of France?"

_PROBE = r"""
import json, sys, time
module, gguf, device, tokens = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def kb(field):
    for line in open('/proc/self/status'):
        if line.startswith(field + ':'):
            return int(line.split()[1])
mod = __import__(module)
t0 = time.perf_counter()
pipe = mod.LLMPipeline(gguf, device)
t1 = time.perf_counter()
config = mod.GenerationConfig(max_new_tokens=tokens)
text = str(pipe.generate(sys.argv[5], config))
t2 = time.perf_counter()
print(json.dumps({'load_s': t1 - t0, 'first_answer_s': t2 - t1, 'hwm_kb': kb('VmHWM'), 'text': text}))
"""

ENGINES = ("ovgenai_c[bundled]", "genai")


def find_gguf(model: Path, explicit: Optional[str] = None) -> Optional[Path]:
    """The GGUF file to load: ``explicit``, else the one beside the IR folder (the default model's cache and the
    tiny fixture keep the GGUF their IR was made from next to it), else None."""
    if explicit:
        return Path(explicit)
    found = sorted(model.parent.glob("*.gguf"))
    return found[0] if len(found) == 1 else None


def measure_gguf_load(gguf: Path, device: str, reps: int, env: Dict[str, str], bundled: Optional[str],
                      genai_ok: bool, tokens: int, stop: Callable[[int], bool]) -> Dict[str, Any]:
    """``reps`` paired rounds of both engines (each sample a fresh process); per engine the median load time,
    first-answer time and peak RSS, and the paired ratios ovgenai_c / openvino_genai."""
    engines = [e for e, ok in zip(ENGINES, (bundled is not None, genai_ok)) if ok]
    samples: Dict[str, List[Dict[str, Any]]] = {e: [] for e in engines}
    errors: Dict[str, str] = {}
    rounds = 0
    for rep in range(reps):
        if stop(rep):
            break
        rounds += 1
        order = engines[rep % len(engines):] + engines[:rep % len(engines)] if engines else []
        for e in order:
            e_env = dict(env)
            module = "ovgenai_c"
            if e == "genai":
                module = "openvino_genai"
            else:
                e_env["OVGENAI_C_LIBRARY"] = bundled or ""
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", _PROBE, module, str(gguf), device, str(tokens), PROMPT],
                                  env=e_env, capture_output=True, text=True, timeout=600)
            wall = time.perf_counter() - t
            if proc.returncode != 0:
                errors.setdefault(e, proc.stderr.strip()[-400:] or f"exit code {proc.returncode}")
                samples[e].append({})
                continue
            sample = json.loads(proc.stdout.strip().splitlines()[-1])
            sample["process_wall_s"] = wall
            samples[e].append(sample)
    out: Dict[str, Any] = {"gguf": str(gguf), "gguf_bytes": os.path.getsize(gguf), "rounds": rounds,
                           "tokens": tokens, "prompt": PROMPT, "engines": {}, "errors": errors}
    for e in engines:
        ok = [s for s in samples[e] if "load_s" in s]
        if not ok:
            continue
        out["engines"][e] = {"load_s": median([s["load_s"] for s in ok]),
                             "first_answer_s": median([s["first_answer_s"] for s in ok]),
                             "peak_rss_mib": median([s["hwm_kb"] / 1024 for s in ok]),
                             "process_wall_s": median([s["process_wall_s"] for s in ok]),
                             "text": ok[0]["text"], "samples": len(ok)}
    if len(engines) == 2:
        a, b = samples[engines[0]], samples[engines[1]]
        out["paired"] = {key: ratio_stats(paired_ratios(a, b, key))
                         for key in ("load_s", "first_answer_s", "hwm_kb", "process_wall_s")}
        texts = [(x.get("text"), y.get("text")) for x, y in zip(a, b) if "text" in x and "text" in y]
        out["same_text"] = all(x == y for x, y in texts) if texts else None
    out["how"] = ("each sample a fresh interpreter: import, LLMPipeline(gguf, device) timed as the load, then one "
                  f"greedy answer of at most {tokens} tokens; peak RSS from VmHWM; engines alternate first per round; "
                  "ratios are paired per round (geometric mean, 95 % interval)")
    return out


def render_gguf_load(sec: Dict[str, Any]) -> List[str]:
    """The section's lines for the printed report."""
    from .render import _ci, table

    out = [""]
    if not sec.get("engines"):
        out.append(f"GGUF load: {sec.get('skipped') or sec.get('error') or sec.get('errors') or 'not run'}")
        return out
    out.append(f"GGUF load — {Path(sec['gguf']).name} ({sec['gguf_bytes'] / 1e6:.1f} MB), {sec['rounds']} paired "
               "round(s), medians")
    rows = [[e, v["load_s"], v["first_answer_s"], v["peak_rss_mib"], v["process_wall_s"]]
            for e, v in sec["engines"].items()]
    out.append(table(["engine", "load s", "first answer s", "peak RSS MiB", "process wall s"], rows))
    paired = sec.get("paired") or {}
    if paired:
        out.append("  ovgenai_c[bundled] ÷ openvino_genai: " + "; ".join(
            f"{name} {_ci(paired.get(key))}" for name, key in (("load", "load_s"), ("first answer", "first_answer_s"),
                                                               ("peak RSS", "hwm_kb"))))
        out.append(f"  same greedy answer in every round: {sec.get('same_text')}")
    for e, msg in (sec.get("errors") or {}).items():
        out.append(f"  ! {e}: {msg.splitlines()[-1] if msg else msg}")
    out.append("  (" + sec.get("how", "") + ")")
    return out


def ratio_lines(sec: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The section's ratio lines (no target: a figure users weigh when they choose GGUF or IR)."""
    lines = []
    for name, key in (("load", "load_s"), ("first answer", "first_answer_s"), ("peak RSS", "hwm_kb")):
        st = (sec.get("paired") or {}).get(key)
        if st:
            lines.append({"what": f"gguf: {name} ovgenai_c[bundled] / openvino_genai [geomean of {st['n']} paired "
                                  "rounds]", "value": st["geomean"], "target": None, "unit": "x", "status": None,
                          "ci95": st.get("ci95")})
    return lines
