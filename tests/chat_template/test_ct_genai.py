"""Bundled renderer vs real GenAI (``openvino_genai.Tokenizer.apply_chat_template``, its own C++ minja-based
engine) over the real templates and conversation shapes of test_ct_templates.py.

Token/text parity with GenAI is the goal. Every case where the two differ must be declared in
genai_divergences.py with a kind whose check recognises the difference, and in every declared case the bundled
renderer must produce what jinja2 (transformers' setup) produces; a declared case that no longer diverges fails
too, so the table stays exact. Contexts are built as the binding builds them (ovgenai_c.Tokenizer →
ovgenai_c_bundled_render_chat_template): messages, add_generation_prompt, tools only when given, then the extra
context (bos_token/eos_token as in the jinja2 suite); GenAI gets the same through its own arguments.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from hf_jinja import hf_render
from conversations import contexts
from genai_divergences import DIVERGENCES, KINDS, declared_kind
from genai_oracle import render_all
from test_ct_templates import REAL_TEMPLATE_NAMES, all_templates  # noqa: F401 - the fixture is reused

TOKENIZER_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "ir"
NAMES = REAL_TEMPLATE_NAMES + ["SmolLM2-135M-Instruct (rt_info)", "ChatML"]


def _split(ctx: dict) -> tuple[dict, dict]:
    """(native context, GenAI job fields) for one jinja2-suite context."""
    extra = {k: v for k, v in ctx.items() if k not in ("messages", "add_generation_prompt", "tools")}
    native = {"messages": ctx["messages"], "add_generation_prompt": ctx["add_generation_prompt"]}
    if ctx["tools"]:
        native["tools"] = ctx["tools"]
    native.update(extra)
    genai = {"messages": ctx["messages"], "add_generation_prompt": ctx["add_generation_prompt"],
             "tools": ctx["tools"], "extra": extra}
    return native, genai


@pytest.fixture(scope="session")
def genai_vs_native(ct_harness, all_templates, tmp_path_factory):  # noqa: F811
    """{template: [(case_id, jinja2 context, genai result, native result)]}, one batch per engine."""
    pytest.importorskip("openvino_genai")
    if not (TOKENIZER_DIR / "openvino_tokenizer.xml").exists():
        pytest.skip("tiny tokenizer fixture not present")
    meta, native_jobs, genai_jobs = [], [], []
    for name in NAMES:
        for cid, ctx in contexts(name):
            native_ctx, genai_job = _split(ctx)
            native_jobs.append({"template": all_templates[name], "context": native_ctx})
            genai_jobs.append({"template": all_templates[name], **genai_job})
            meta.append((name, cid, ctx))
    native = ct_harness.batch(native_jobs)
    genai = render_all(TOKENIZER_DIR, genai_jobs, tmp_path_factory.mktemp("genai_oracle"))
    assert len(genai) == len(native) == len(meta)
    out: dict[str, list] = {}
    for (name, cid, ctx), g, n in zip(meta, genai, native):
        out.setdefault(name, []).append((cid, ctx, g, n))
    return out


def _agree(a: dict, b: dict) -> bool:
    return ("ok" in a and a.get("ok") == b.get("ok")) or ("error" in a and "error" in b)


def test_declarations_are_well_formed(all_templates):  # noqa: F811
    assert set(DIVERGENCES) <= set(NAMES)
    for name, entries in DIVERGENCES.items():
        seen: set = set()
        for cases, kind in entries:
            assert kind in KINDS, (name, kind)
            assert not (seen & cases), f"{name}: a case is declared twice"
            seen |= cases


@pytest.mark.parametrize("name", NAMES)
def test_renders_like_genai_or_declared(name, genai_vs_native, all_templates, hf_env):  # noqa: F811
    problems = []
    for cid, ctx, g, n in genai_vs_native[name]:
        kind = declared_kind(name, cid)
        if _agree(g, n):
            if kind is not None:
                problems.append(f"{cid}: declared {kind} but now renders like GenAI (remove the declaration)")
            continue
        if kind is None:
            problems.append(f"{cid}: undeclared divergence\n  genai  {g!r:.600}\n  native {n!r:.600}")
            continue
        if not KINDS[kind][2](ctx, g, n):
            problems.append(f"{cid}: declared {kind}, which does not describe it\n  genai  {g!r:.600}\n"
                            f"  native {n!r:.600}")
            continue
        ok, expected = hf_render(hf_env, all_templates[name], ctx)
        if ok != ("ok" in n) or (ok and expected != n["ok"]):
            problems.append(f"{cid}: declared {kind}, but the bundled renderer does not match jinja2 either\n"
                            f"  jinja2 {expected!r:.600}\n  native {n!r:.600}")
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


def test_most_cases_agree_with_genai(genai_vs_native):
    """Guards against an oracle that renders nothing comparable (e.g. every GenAI call failing)."""
    rows = [(g, n) for cases in genai_vs_native.values() for _, _, g, n in cases]
    agree_text = sum(1 for g, n in rows if "ok" in g and g.get("ok") == n.get("ok"))
    assert len(rows) == 1160
    assert agree_text >= 800, agree_text
