"""The human-readable report: one table per section and the ratio lines, from the report dict alone (so a
saved JSON report can be rendered again)."""
from __future__ import annotations

from typing import Any, Dict, List


def fmt(x: Any, nd: int = 2) -> str:
    """A table cell: floats with ``nd`` decimals, None as "-"."""
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)



def table(headers: List[str], rows: List[List[Any]]) -> str:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    cells = [[fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)),
           "  ".join("-" * w for w in widths)]
    for r in cells:
        out.append("  ".join(c.rjust(widths[i]) if i else c.ljust(widths[i]) for i, c in enumerate(r)))
    return "\n".join(out)


def render(report: Dict[str, Any]) -> str:
    """The whole report as text (the sections that ran, then the ratio lines and the run's conditions)."""
    out: List[str] = []
    m = report.get("meta", {})
    mach = m.get("machine", {})
    out.append(f"ovgenai_c benchmark — {m.get('date_utc')} — {mach.get('cpu')} ({mach.get('cores')} cores), "
               f"Python {mach.get('python')}")
    out.append(f"model: {m.get('model')}  (openvino_model.bin {(fmt((m.get('model_bin_bytes') or 0) / 1e6, 1))} MB)"
               f"  device {m.get('device')}{'  [--quick]' if m.get('quick') else ''}")
    out.append("engines: " + "; ".join(f"{l['engine']} = {l['path']}" for l in m.get("ovgenai_c_libraries", [])) +
               ("; genai[PA] / genai[SDPA] = openvino_genai pybind " + m.get("versions", {}).get("openvino-genai", "")
                if (m.get("oracle") or {}).get("available") else f"; openvino_genai: {(m.get('oracle') or {}).get('reason')}"))
    for k, v in (m.get("engine_errors") or {}).items():
        out.append(f"  ! {k}: {v.splitlines()[0] if v else v}")
    for k, v in (m.get("worker_crashes") or {}).items():
        out.append(f"  ! {k} crashed: {v[0].splitlines()[0] if v and v[0] else v}"
                   + (f" (and {len(v) - 1} more)" if len(v) > 1 else ""))
    if m.get("worker_logs"):
        out.append(f"  worker logs kept in {m['worker_logs']}")

    bo = report.get("binding_overhead", {})
    if bo.get("engines"):
        out.append("")
        out.append(f"Binding overhead — \"{bo['request']['prompt']}\", {bo['request']['max_new_tokens']} tokens "
                   f"(ignore_eos), streamer on, median of {bo['reps']}")
        rows = []
        for e, s in bo["engines"].items():
            rows.append([e, s.get("ttft_ms"), s.get("tpot_ms"), s.get("throughput"), s.get("wall_ttft_ms"),
                         s.get("e2e_tokens_per_s"), s.get("outside_engine_ms"),
                         (s.get("peak_rss_kb") or 0) / 1024 if s.get("peak_rss_kb") else None,
                         s.get("load_s"), s.get("n_in")])
        out.append(table(["engine", "TTFT ms", "TPOT ms", "tok/s", "wall TTFT ms", "e2e tok/s", "outside ms",
                           "peak RSS MiB", "load s", "in tok"], rows))
        out.append("  (outside ms: wall time of the Python call minus the engine's own generate_duration = binding "
                   "+ marshalling + thread hand-off per call)")
        out.append("  (" + bo.get("what", "") + ")")
    elif bo.get("error"):
        out.append(f"\nBinding overhead: error: {bo['error']}")

    out += render_official(report.get("official") or {})

    bp = report.get("backend_parity", {})
    if bp.get("cells"):
        out.append("")
        out.append(f"Backend parity — engine-reported TTFT / TPOT in ms, median of {bp['reps']}")
        engines = list(bp["cells"][0]["engines"])
        rows = []
        for c in bp["cells"]:
            n_in = next((v.get("n_in") for v in c["engines"].values() if v.get("n_in")), None)
            r: List[Any] = [f"{c['prompt_tokens_target']} ({fmt(n_in, 0)}) / {c['max_new_tokens']}"]
            for e in engines:
                s = c["engines"].get(e, {})
                r += [s.get("ttft_ms"), s.get("tpot_ms")]
            for tag, v in (c.get("ratios") or {}).items():
                r += [v.get("ttft"), v.get("tpot")]
            rows.append(r)
        headers = ["prompt (actual) / out"]
        for e in engines:
            headers += [f"{e} TTFT", "TPOT"]
        for tag in (bp["cells"][0].get("ratios") or {}):
            short = tag.replace("ovgenai_c", "ov").replace("genai", "g")
            headers += [f"{short} TTFT x", "TPOT x"]
        out.append(table(headers, rows))
        out.append("  prompt = target tokens (actual tokens after the chat template, which the C ABI always applies)")
    elif bp.get("error"):
        out.append(f"\nBackend parity: error: {bp['error']}")

    ga = report.get("greedy_agreement", {})
    if ga.get("pairs"):
        out.append("")
        out.append(f"Greedy agreement — {len(ga['prompts'])} prompts, up to {ga['max_new_tokens']} tokens, identical text")
        out.append(table(["pair", "identical", "prompts", "rate", "common prefix chars"],
                          [[k, v["identical"], v["prompts"], v["rate"], v["mean_common_prefix_chars"]]
                           for k, v in ga["pairs"].items()]))

    sc = report.get("streaming_cost", {})
    d = sc.get("abi_double", {})
    out.append("")
    if sc.get("skipped") or sc.get("error"):
        out.append(f"Streaming cost: {sc.get('skipped') or sc.get('error')}")
    elif d.get("us_per_token_vs_c_no_streamer"):
        out.append(f"Streaming cost — ABI double, {d['tokens']} tokens, best of {d['reps']} (µs per token over the C "
                   "call with no streamer)")
        per = d["us_per_token_vs_c_no_streamer"]
        out.append(table(["mode", "µs/token", "total ms"],
                          [[mo, per.get(mo), d["best_s"][mo] * 1000] for mo in d["best_s"]]))
        pc = d.get("per_call_us") or {}
        if pc:
            out.append("Fixed cost of one call on the ABI double (1 token): " +
                       ", ".join(f"{k} {v:.0f} µs" for k, v in pc.items()))
    else:
        out.append(f"Streaming cost — ABI double: {d.get('skipped') or d.get('error')}")
    if sc.get("engines"):
        rows = []
        for e, v in sc["engines"].items():
            per = v.get("us_per_token_vs_no_streamer", {})
            rows.append([e, v["tokens"], per.get("callback"), per.get("iter"), per.get("async"),
                         v.get("noise_us_per_token")])
        out.append("Streaming on real engines (µs per token over the same engine without a streamer, best of reps)")
        out.append(table(["engine", "tokens", "callback", "iter", "async", "± noise"], rows))

    imp = report.get("import_footprint", {}).get("modules", {})
    if imp:
        out.append("")
        out.append(f"Import and footprint — fresh process each, median of {report['import_footprint'].get('reps')}")
        rows = []
        for mname, v in imp.items():
            rows.append([mname, v.get("import_s"), (v.get("rss_kb") or 0) / 1024 if v.get("rss_kb") else None,
                         (v.get("rss_delta_kb") or 0) / 1024 if v.get("rss_delta_kb") is not None else None,
                         v.get("process_wall_s"), v.get("first_use_load_library_s")])
        out.append(table(["import", "import s", "RSS MiB", "+RSS MiB", "process wall s", "load_library s"], rows))

    pl = report.get("physical_limit", {})
    if pl.get("bandwidth_gbps"):
        out.append("")
        out.append(f"Physical limit — read bandwidth {pl['bandwidth_gbps']:.1f} GB/s (numpy sum, best of runs); "
                   f"weights {(pl.get('weight_bytes') or 0) / 1e6:.1f} MB → decode bound "
                   f"{fmt(pl.get('decode_bound_tokens_per_s'), 0)} tok/s ({fmt(pl.get('decode_bound_tpot_ms'))} ms/token)")
        rows = [[e, v["tpot_ms"], v["tokens_per_s"], v["fraction_of_bound"]]
                for e, v in (pl.get("decode_fraction") or {}).items()]
        if rows:
            out.append(table(["engine", "TPOT ms", "tok/s", "fraction of bound"], rows))

    cc = report.get("concurrency", {})
    out.append("")
    if "shared" in cc:
        out.append(f"Concurrency — {cc['engine']}, {cc['threads']} threads × {cc['requests_per_thread']} requests × "
                   f"{cc['max_new_tokens']} tokens")
        out.append(table(["mode", "agg tok/s", "p50 s", "p95 s", "requests"],
                          [[mo, cc[mo]["aggregate_tokens_per_s"], cc[mo]["p50_latency_s"], cc[mo]["p95_latency_s"],
                            cc[mo]["requests"]] for mo in ("shared", "separate")]))
    else:
        out.append(f"Concurrency: {cc.get('skipped') or cc.get('error')}")

    out.extend(render_serve(report.get("serve") or {}))
    from .gguf_load import render_gguf_load

    out.extend(render_gguf_load(report.get("gguf_load") or {}))
    out.extend(render_lookup(report.get("lookup", {})))
    out.extend(render_speculative(report.get("speculative", {})))
    out.extend(render_whisper(report.get("whisper") or {}))

    rl = report.get("ratios", {}).get("lines", [])
    if rl:
        out.append("")
        out.append("Ratios (targets: TPOT ≤ 1.00, TTFT ≤ 1.05 vs GenAI; streaming ≤ 20 µs/token; import ≤ 0.05 s)")
        out.append("  (engine ratios: geometric mean of per-round ratios, every round running all engines back to back, "
                   "with its 95% interval; 'within noise' = above the target, but the interval reaches it)")
        for ln in rl:
            v = ln["value"]
            val = "-" if v is None else (f"{v:.3f}" if ln["unit"] in ("x", "rate", "fraction", "s") else
                                         f"{v:.2f} ms" if ln["unit"] == "ms" else f"{v:.1f} µs")
            tgt = "" if ln["target"] is None else \
                f"   target {'≥' if ln.get('at_least') else '≤'} {ln['target']}{' µs' if ln['unit'] == 'us' else ''}"
            ci = ln.get("ci95")
            band = f" (95% CI {ci[0]:.3f}–{ci[1]:.3f})" if ci else ""
            st = "" if ln["status"] is None else {"ok": "   ok", "over": "   OVER", "under": "   UNDER"}.get(
                ln["status"], "   " + ln["status"])
            out.append(f"  {ln['what']}: {val}{band}{tgt}{st}")
    out.append("")
    out.append(f"elapsed {fmt(m.get('elapsed_s'), 1)} s; load average (1/5/15 min) at start "
               f"{m.get('load_average_start')}, at end {m.get('load_average_end')} on {mach.get('cores')} cores"
               + (f"; repetitions trimmed by the time budget: {m['trimmed_by_budget']}" if m.get("trimmed_by_budget")
                  else ""))
    return "\n".join(out)


def render_official(off: Dict[str, Any]) -> List[str]:
    """The official-library section: what was found and the side-by-side table (one column per binding), or one
    line saying why there is none."""
    if not off:
        return []
    if not off.get("modes"):
        why = off.get("skipped") or off.get("error") or "not measured"
        lib = f" ({off['library']})" if off.get("library") else ""
        return ["", f"Official library: {why}{lib}"]
    ov, g = off["engine"], off["pybind"]["engine"]
    cmp = off.get("comparison") or {}
    note = cmp.get("note") or ""
    if not cmp.get("like_for_like"):
        note = note.replace("not like-for-like", "NOT LIKE-FOR-LIKE", 1)
    py = off["pybind"]
    out = ["", f"Official library — {ov} = ovgenai_c over {off['library']}",
           f"  vs {g} = openvino_genai pybind {py.get('version')} ({py.get('from')}) in its own process: {note}"]
    if py.get("note"):
        out.append(f"  ({py['note']})")
    out.append(f"  \"{off['request']['prompt']}\", {off['request']['max_new_tokens']} tokens (ignore_eos), median of "
               f"{off['reps']}; ratio = geometric mean of paired rounds (95% interval)")
    rows = []
    for mode, label in (("none", "no streamer"), ("callback", "streamer on")):
        md = off["modes"].get(mode) or {}
        es, pt = md.get("engines") or {}, md.get("paired") or {}
        for key, name in (("ttft", "TTFT ms"), ("tpot", "TPOT ms")):
            st = pt.get(key) or {}
            ci = st.get("ci95")
            rows.append([f"{name}, {label}", (es.get(ov) or {}).get(f"{key}_ms"), (es.get(g) or {}).get(f"{key}_ms"),
                         fmt(st.get("geomean"), 3), f"{ci[0]:.3f}–{ci[1]:.3f}" if ci else None])
        rows.append([f"outside ms, {label}", (es.get(ov) or {}).get("outside_engine_ms"),
                     (es.get(g) or {}).get("outside_engine_ms"), None, None])
    out.append(table(["measure", ov, g, "ratio", "95% CI"], rows))
    out.append("  (outside ms: wall time of the call minus the engine's own generate_duration; no streamer: no "
               "callback on either side, as ovgenai_c calls the official library then)")
    return out


def render_serve(sec: Dict[str, Any]) -> List[str]:
    """The serve section: tokens/s and TTFT per system and concurrency level, and how the server scheduled."""
    out = [""]
    if not sec.get("systems"):
        out.append(f"Serve: {sec.get('skipped') or sec.get('error') or 'not run'}")
        return out
    sch = sec.get("server_scheduling") or {}
    out.append(f"Serve — {sec['max_tokens']} tokens max per request, {sec['requests_per_client']} request(s) per "
               f"client per level, {len((sec.get('rounds') or []))} round(s); server mode: {sch.get('mode')} "
               f"({sch.get('pipelines')} pipeline(s))")
    rows = []
    for name, per in sec["systems"].items():
        for lv, c in per.items():
            rows.append([name, lv, c.get("tokens_per_s"), c.get("p50_ttft_ms"), c.get("p95_ttft_ms"),
                         c.get("requests"), c.get("errors")])
    out.append(table(["system", "clients", "agg tok/s", "p50 TTFT ms", "p95 TTFT ms", "requests", "errors"], rows))
    if sec.get("genai_cb_skipped"):
        out.append(f"  (GenAI ContinuousBatchingPipeline not run: {sec['genai_cb_skipped']})")
    for k, v in (sec.get("engine_errors") or {}).items():
        out.append(f"  ! {k}: {v.splitlines()[0] if v else v}")
    out.append("  (" + sec.get("how", "") + ")")
    return out


def _ci(st: Any) -> str:
    if not st:
        return "-"
    ci = st.get("ci95")
    return f"{st['geomean']:.2f}" + (f" ({ci[0]:.2f}–{ci[1]:.2f})" if ci else "")


def render_lookup(lk: Dict[str, Any]) -> List[str]:
    """The lookup section: tokens/s per prompt and engine, the paired ratios, pooled by kind against the targets."""
    if not lk.get("prompts"):
        why = lk.get("skipped") or lk.get("error")
        return [f"Prompt lookup: {why}"] if why else []
    engines = lk["engines"]
    ours = engines[0]
    others = engines[1:]
    props = lk.get("properties")
    out = ["", f"Prompt lookup — {ours} ({lk['config']}) vs {', '.join(others)}; end-to-end tokens/s of a streamed "
               f"answer (≤ {lk['max_new_tokens']} tokens), median of {lk['reps']} paired rounds"
               + (f"; every engine with {props}" if isinstance(props, dict) and props else "")]
    rows = []
    for key, row in lk["prompts"].items():
        es = row["engines"]
        rows.append([f"{key} ({row['kind']})", *[es[e]["tokens_per_s"] for e in engines],
                     "/".join(fmt(es[e]["n_out"], 0) for e in engines),
                     *[_ci(row["ratios"].get(f"{ours} / {o}")) for o in others], row["same_text_as_genai_default"]])
    out.append(table(["prompt", *[f"{e} tok/s" for e in engines], "tokens (each)",
                      *[f"÷ {o}" for o in others], "same text"], rows))
    for kind, tags in (lk.get("pooled") or {}).items():
        target = (lk.get("targets") or {}).get(kind)
        verdict = (lk.get("verdicts") or {}).get(kind)
        parts = [f"÷ {tag.split(' / ')[1]} {_ci(st)}" for tag, st in tags.items()]
        out.append(f"  pooled {kind}, end-to-end tokens/s: " + "; ".join(parts) +
                   (f"   target ≥ {target} vs GenAI default: {verdict}" if target is not None and verdict else ""))
        dec = (lk.get("pooled_decode") or {}).get(kind) or {}
        if dec:
            out.append(f"  pooled {kind}, decode tokens/s (1000 / TPOT): " +
                       "; ".join(f"÷ {tag.split(' / ')[1]} {_ci(st)}" for tag, st in dec.items()))
    return out


def render_speculative(sec: Dict[str, Any]) -> List[str]:
    """The speculative section: tokens/s per prompt and engine with a draft model, and the paired ratios."""
    if not sec.get("prompts"):
        why = sec.get("skipped") or sec.get("error")
        return [f"Speculative decoding: {why}"] if why else []
    engines = sec["engines"]
    ours, others = engines[0], engines[1:]
    draft = "the model itself (no speed-up expected: the cost of drafting and verifying)" if sec.get("self_draft") \
        else sec.get("draft")
    out = ["", f"Speculative decoding — {ours} ({sec['config']}) vs {', '.join(others)}; draft: {draft}; end-to-end "
               f"tokens/s of a streamed answer (≤ {sec['max_new_tokens']} tokens), median of {sec['reps']} paired "
               "rounds"]
    rows = []
    for key, row in sec["prompts"].items():
        es = row["engines"]
        rows.append([key, *[es[e]["tokens_per_s"] for e in engines], "/".join(fmt(es[e]["n_out"], 0) for e in engines),
                     *[_ci(row["ratios"].get(f"{ours} / {o}")) for o in others], row["same_text_as_genai_draft"]])
    out.append(table(["prompt", *[f"{e} tok/s" for e in engines], "tokens (each)", *[f"÷ {o}" for o in others],
                      "same text as GenAI's"], rows))
    out.append("  pooled, end-to-end tokens/s: " + "; ".join(f"÷ {tag.split(' / ')[1]} {_ci(st)}"
                                                            for tag, st in (sec.get("pooled") or {}).items()))
    return out


def render_whisper(sec: Dict[str, Any]) -> List[str]:
    """The whisper section: real-time factor, time to first segment and time to first text (streamed) per
    pipeline and clip."""
    out = [""]
    if not sec.get("systems"):
        out.append(f"Whisper: {sec.get('skipped') or sec.get('error') or 'not run'}")
        return out
    clips = sec.get("clips") or {}
    out.append(f"Whisper — {sec.get('model_name')}, {len(sec.get('rounds') or [])} paired round(s); clips: "
               + ", ".join(f"{c} {v['duration_s']:.1f} s ({v['windows']} window(s))" for c, v in clips.items()))
    rows = []
    for name, per in sec["systems"].items():
        for c, cell in per.items():
            rows.append([name, c, cell.get("rtf"), cell.get("ttfs_ms"), cell.get("first_text_ms"), cell.get("rounds")])
    out.append(table(["pipeline", "clip", "real-time factor", "time to first segment ms",
                      "time to first text ms (streamed)", "rounds"], rows))
    streamed_differs = sorted({f"{name} {c}" for r in sec.get("rounds") or [] for name, per in r.items()
                               for c, cell in per.items() if cell.get("streamed_text_same") is False})
    if streamed_differs:
        out.append("  ! a streamed call returned another text than the plain call: " + ", ".join(streamed_differs))
    agree = sec.get("transcripts_agree") or {}
    if agree:
        out.append("  same transcript from both pipelines in every round: "
                   + ", ".join(f"{c} {'yes' if v else 'no' if v is not None else '-'}" for c, v in agree.items()))
    for k, v in (sec.get("engine_errors") or {}).items():
        out.append(f"  ! {k}: {v.splitlines()[0] if v else v}")
    out.append("  (" + sec.get("how", "") + ")")
    return out
