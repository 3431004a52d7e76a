"""The ratio lines of a report: ovgenai_c against openvino_genai (paired geometric means with their 95 %
intervals where the rounds were paired), each against its target when it has one."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from .gguf_load import ratio_lines as gguf_ratio_lines
from .serving import ratio_lines as serve_ratio_lines
from .transcription import ratio_lines as whisper_ratio_lines
from .stats import ratio

TARGETS = {"tpot_ratio": 1.00, "ttft_ratio": 1.05, "stream_us_per_token": 20.0, "import_s": 0.05,
           # ovgenai_c over the official library vs pybind on the same library, no streamer (issue 17 item 6)
           "official_no_streamer_tpot_ratio": 1.01, "official_no_streamer_ttft_ratio": 1.02,
           "official_outside_engine_ms_over_pybind": 0.05}


def ratio_lines(report: Dict[str, Any], ov_engines: Sequence[str], genai_engines: Sequence[str]) -> Dict[str, Any]:
    """The report's ratio lines (what, value, target, unit, status, 95 % interval), each ovgenai_c engine against
    each openvino_genai engine, plus the streaming, import, physical and concurrency figures."""
    lines: List[Dict[str, Any]] = []

    def add(what: str, value: Optional[float], target: Optional[float], unit: str = "x",
            ci: Optional[Sequence[float]] = None, like_for_like: Optional[bool] = None) -> None:
        status = None
        if value is not None and target is not None:
            status = "ok" if value <= target else "over"
            if status == "over" and ci and ci[0] <= target:
                status = "over, within noise"  # the 95 % interval still reaches the target
        if value is not None and like_for_like is False:
            status = "not like-for-like"  # two different GenAI releases: no verdict against the target
        line = {"what": what, "value": value, "target": target, "unit": unit, "status": status,
                "ci95": list(ci) if ci else None}
        if like_for_like is not None:
            line["like_for_like"] = like_for_like
        lines.append(line)

    def add_paired(what: str, st: Optional[Dict[str, Any]], fallback: Optional[float], target: float,
                   like_for_like: Optional[bool] = None) -> None:
        """A ratio from paired rounds: geometric mean with its 95 % interval (ratio of medians without them)."""
        if st:
            add(f"{what} [geomean of {st['n']} paired rounds]", st["geomean"], target, ci=st.get("ci95"),
                like_for_like=like_for_like)
        else:
            add(what, fallback, target, like_for_like=like_for_like)

    over = report["binding_overhead"].get("engines", {})
    paired = report["binding_overhead"].get("paired", {})
    comparisons = report["binding_overhead"].get("comparisons") or {}
    for ov in ov_engines:
        for g in genai_engines:
            a, b = over.get(ov, {}), over.get(g, {})
            tag = f"{ov} / {g}"
            pt = paired.get(tag) or {}
            cmp = comparisons.get(tag)  # the official library against a pybind: like-for-like only on one release
            lfl = None if cmp is None else bool(cmp.get("like_for_like"))
            label = tag + ("" if lfl is not False else f" ({cmp.get('note')})")
            add_paired(f"binding: TTFT {label}", pt.get("ttft"), ratio(a.get("ttft_ms"), b.get("ttft_ms")),
                       TARGETS["ttft_ratio"], lfl)
            add_paired(f"binding: TPOT {label}", pt.get("tpot"), ratio(a.get("tpot_ms"), b.get("tpot_ms")),
                       TARGETS["tpot_ratio"], lfl)
            add(f"binding: wall TTFT (to first streamed text) {tag}", ratio(a.get("wall_ttft_ms"),
                                                                             b.get("wall_ttft_ms")), None)
            add(f"binding: end-to-end tokens/s {tag}", ratio(a.get("e2e_tokens_per_s"),
                                                             b.get("e2e_tokens_per_s")), None)
            add(f"binding: peak RSS {tag}", ratio(a.get("peak_rss_kb"), b.get("peak_rss_kb")), None)
            add(f"binding: load time {tag}", ratio(a.get("load_s"), b.get("load_s")), None)
            add(f"binding: per-call time outside the engine's generate timer, ms, {ov} vs {g}",
                (a.get("outside_engine_ms") or 0) - (b.get("outside_engine_ms") or 0)
                if a.get("outside_engine_ms") is not None and b.get("outside_engine_ms") is not None else None,
                None, "ms")
    off = report.get("official") or {}
    if off.get("modes"):
        ov, g = off["engine"], off["pybind"]["engine"]
        cmp = off.get("comparison") or {}
        lfl = bool(cmp.get("like_for_like"))
        tag = f"{ov} / {g}" + ("" if lfl else f" ({cmp.get('note')})")
        for mode, label, ttft_target, tpot_target in (
                ("none", "no streamer", TARGETS["official_no_streamer_ttft_ratio"],
                 TARGETS["official_no_streamer_tpot_ratio"]),
                ("callback", "streamer on", TARGETS["ttft_ratio"], TARGETS["tpot_ratio"])):
            md = off["modes"].get(mode) or {}
            pt, es = md.get("paired") or {}, md.get("engines") or {}
            a, b = es.get(ov) or {}, es.get(g) or {}
            add_paired(f"official, {label}: TTFT {tag}", pt.get("ttft"), ratio(a.get("ttft_ms"), b.get("ttft_ms")),
                       ttft_target, lfl)
            add_paired(f"official, {label}: TPOT {tag}", pt.get("tpot"), ratio(a.get("tpot_ms"), b.get("tpot_ms")),
                       tpot_target, lfl)
            add(f"official, {label}: per-call time outside the engine's generate timer, ms, {ov} over {g}"
                + ("" if lfl else f" ({cmp.get('note')})"), md.get("outside_engine_ms_over_pybind"),
                TARGETS["official_outside_engine_ms_over_pybind"], "ms", like_for_like=lfl)
    bp = report["backend_parity"]
    for tag, st in (bp.get("pooled") or {}).items():
        ncells = len(bp.get("cells", []))
        add_paired(f"parity, all {ncells} cells pooled: TTFT {tag}", st.get("ttft"), None, TARGETS["ttft_ratio"])
        add_paired(f"parity, all {ncells} cells pooled: TPOT {tag}", st.get("tpot"), None, TARGETS["tpot_ratio"])
    for row in bp.get("cells", []):
        for tag, r in (row.get("ratios") or {}).items():
            cell = f"prompt {row['prompt_tokens_target']}, out {row['max_new_tokens']}"
            pt = (row.get("paired") or {}).get(tag) or {}
            add_paired(f"parity: TTFT {tag} ({cell})", pt.get("ttft"), r.get("ttft"), TARGETS["ttft_ratio"])
            add_paired(f"parity: TPOT {tag} ({cell})", pt.get("tpot"), r.get("tpot"), TARGETS["tpot_ratio"])
    for pair, v in report["greedy_agreement"].get("pairs", {}).items():
        add(f"agreement: {pair}", v.get("rate"), None, "rate")
    dbl = report["streaming_cost"].get("abi_double", {})
    for m, v in (dbl.get("us_per_token_vs_c_no_streamer") or {}).items():
        if m in ("callback", "iter", "async", "generate"):
            add(f"streaming: {m} per token (ABI double, vs C with no streamer)", v,
                TARGETS["stream_us_per_token"], "us")
    mods = report["import_footprint"].get("modules", {})
    oi, gi = mods.get("ovgenai_c", {}), mods.get("openvino_genai", {})
    add("import: ovgenai_c wall", oi.get("import_s"), TARGETS["import_s"], "s")
    add("import: openvino_genai wall", gi.get("import_s"), None, "s")
    add("import: ovgenai_c / openvino_genai time", ratio(oi.get("import_s"), gi.get("import_s")), None)
    add("import: ovgenai_c / openvino_genai RSS delta", ratio(oi.get("rss_delta_kb"), gi.get("rss_delta_kb")), None)
    pc = dbl.get("per_call_us") or {}
    if "c_call" in pc and "generate" in pc:
        add("binding: fixed cost per generate() call over the C call (ABI double)", pc["generate"] - pc["c_call"],
            None, "us")
    for e, v in (report["physical_limit"].get("decode_fraction") or {}).items():
        add(f"physical: {e} decode speed / bandwidth bound", v.get("fraction_of_bound"), None, "fraction")
    c = report["concurrency"]
    if "shared" in c and "separate" in c:
        add("concurrency: tokens/s separate / shared", ratio(c["separate"].get("aggregate_tokens_per_s"),
                                                             c["shared"].get("aggregate_tokens_per_s")), None)
    lines.extend(serve_ratio_lines(report.get("serve") or {}))
    lines.extend(whisper_ratio_lines(report.get("whisper") or {}))
    lines.extend(gguf_ratio_lines(report.get("gguf_load") or {}))
    return {"lines": lines, "targets": TARGETS}

