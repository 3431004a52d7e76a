"""Every case where the bundled renderer and real GenAI (openvino_genai, minja-based) render a real template
differently, each with its reason. test_ct_genai.py fails on a divergence not listed here, on a listed case that
no longer diverges, and when a listed case does not look the way its kind says. native/README.md ("Chat
templates: where GenAI and jinja2 differ") is the prose form of this table.

In every listed case the bundled renderer produces what Python's jinja2 (Hugging Face transformers' setup)
produces, for the reason given with the kind.
"""
from __future__ import annotations

import html
import re
from typing import Callable, Dict, List, Tuple

_BASE = ("plain", "system", "multi_turn", "assistant_last", "tools_only", "tool_calls", "thinking_on", "thinking_off")


def _cases(*names: str) -> frozenset:
    return frozenset(f"{n}-{g}" for n in names for g in ("gen", "nogen"))


ALL = _cases(*_BASE)
NO_TOOLS = _cases("plain", "system", "multi_turn", "assistant_last", "thinking_on", "thinking_off")
TOOLS = _cases("tools_only", "tool_calls")
TOOL_CALLS = _cases("tool_calls")
TOOLS_ONLY = _cases("tools_only")
SYSTEM = _cases("system", "multi_turn")

# Text only minja's polyfills write (tools in the system message, tool calls / tool results as JSON).
POLYFILL_MARKS = ("You can call any of the following tools to satisfy the user's requests",
                  '"tool_calls": [', '"tool_response": {')

Result = dict  # {"ok": text} | {"error": message}
Check = Callable[[dict, Result, Result], bool]  # (context, genai, native) -> looks like this kind


def _ok(r: Result) -> bool:
    return "ok" in r


def _has_polyfill(text: str) -> bool:
    return any(m in text for m in POLYFILL_MARKS)


def _system_folded(ctx: dict, g: Result, n: Result) -> bool:
    msgs = ctx["messages"]
    users = [m["content"] for m in msgs if m["role"] == "user"]
    return _ok(g) and msgs[0]["role"] == "system" and f"{msgs[0]['content']}\n{users[0]}" in g["ok"]


def _ws(s: str) -> str:
    return re.sub(r"\s+", "", s)


# kind -> (what GenAI does, why we keep jinja2's result, check)
KINDS: Dict[str, Tuple[str, str, Check]] = {
    "minja_error": (
        "raises: minja cannot parse or evaluate valid Jinja the template uses (`is undefined`/`is not undefined` "
        "tests, `tojson(ensure_ascii=...)`, `str.format`, some nested expressions)",
        "GenAI is broken here (valid Jinja, no prompt at all); we render as jinja2",
        lambda ctx, g, n: "error" in g and _ok(n)),
    "tool_polyfill": (
        "minja probes the template's capabilities and, when it decides the template lacks tool support, rewrites "
        "the conversation: the tools go into the system message (\"You can call any of the following tools...\"), "
        "assistant tool_calls become a JSON content, tool results become user messages with {\"tool_response\"}",
        "not reproduced: for templates with their own tool format (Spark2.5, Laguna, Ling, Granite 3.3, DeepSeek "
        "V3.2/V4, LFM2, Ministral, SmolLM3, firefunction, muse-glimmer) the probe misfires (GenAI logs \"Failed "
        "to infer a tool call example (possible template bug)\") and replaces the model's own format - broken; "
        "for tool-less templates (ChatML, SmolLM2, Phi-3.5, gemma-2, DeepSeek R1-Distill/V3.1, rwkv) the text is "
        "GenAI's invention, which the renderer does not carry (a candidate follow-up)",
        lambda ctx, g, n: _ok(g) and _has_polyfill(g["ok"]) and not (_ok(n) and _has_polyfill(n["ok"]))),
    "system_polyfill": (
        "minja folds the system message into the first user message (\"<system>\\n<user>\") when its probe says "
        "the template has no system role",
        "not reproduced (same polyfill layer); gemma-2 itself raises \"System role not supported\", as transformers",
        _system_folded),
    "undefined_lenient": (
        "renders: absent `tools` is undefined in GenAI (transformers passes tools=None) and minja iterates or "
        "reads undefined/none as empty where jinja2 raises ('NoneType' object is not iterable, 'functions' is "
        "undefined, missing attribute)",
        "kept: transformers' context (tools/documents = none) and jinja2's errors, so a template that cannot "
        "render a conversation says so instead of producing a prompt its authors never wrote",
        lambda ctx, g, n: _ok(g) and "error" in n),
    "float_repr": (
        "prints a JSON float such as 0.5 as 0.500000 (C's %f)",
        "GenAI is broken here (Python and jinja2 print 0.5)",
        lambda ctx, g, n: _ok(g) and _ok(n) and g["ok"] != n["ok"]
        and re.sub(r"(\d)\.(\d+?)0+\b", r"\1.\2", g["ok"]) == n["ok"]),
    "undefined_text": (
        "prints an undefined value piped through a filter (`param.description|trim`) as \"None\"",
        "GenAI is broken here (jinja2 prints an empty string)",
        lambda ctx, g, n: _ok(g) and _ok(n) and g["ok"] != n["ok"] and g["ok"].replace("None", "") == n["ok"]),
    "lstrip_expression": (
        "with lstrip_blocks also strips the indentation in front of `{{ ... }}` (jinja2 strips it only before "
        "block tags)",
        "GenAI is broken here (Jinja's documented lstrip_blocks)",
        lambda ctx, g, n: _ok(g) and _ok(n) and g["ok"] != n["ok"] and _ws(g["ok"]) == _ws(n["ok"])),
    "markup_concat": (
        "has no Markup: `\"...\"|safe + text` is plain concatenation",
        "kept: in jinja2 (so in transformers) the result is Markup and the added text is HTML-escaped (&#34;); "
        "the model's own tooling renders it that way",
        lambda ctx, g, n: _ok(g) and _ok(n) and g["ok"] != n["ok"] and html.unescape(n["ok"]) == g["ok"]),
    "sandbox_mutation": (
        "allows `list.append` in a template",
        "kept: transformers renders in jinja2's ImmutableSandboxedEnvironment, which refuses it (the template "
        "fails there too)",
        lambda ctx, g, n: _ok(g) and "unsafe" in n.get("error", "")),
    "tojson_generator": (
        "`map(...)` yields a list, so `| tojson` works",
        "kept: in jinja2 map() is a generator and tojson raises (\"Object of type generator is not JSON "
        "serializable\"), as in transformers",
        lambda ctx, g, n: _ok(g) and "generator" in n.get("error", "")),
    "str_concat_dict": (
        "`str + dict` concatenates the dict's text",
        "kept: Python raises TypeError (\"can only concatenate str (not \\\"dict\\\") to str\"), as transformers",
        lambda ctx, g, n: _ok(g) and "can only concatenate" in n.get("error", "")),
}

# template -> [(cases, kind)]; measured with openvino-genai 2026.4.1 over conversations.contexts().
DIVERGENCES: Dict[str, List[Tuple[frozenset, str]]] = {
    "ByteDance-Seed-OSS": [(TOOLS, "lstrip_expression")],
    "ChatML": [(TOOLS, "tool_polyfill")],
    "SmolLM2-135M-Instruct (rt_info)": [(TOOLS, "tool_polyfill")],
    "Cohere2MoE": [(ALL, "minja_error")],
    "CohereForAI-c4ai-command-r-plus-tool_use": [(ALL, "undefined_lenient")],
    "GLM-4.6": [(ALL, "minja_error")],
    "GLM-4.7-Flash": [(TOOLS, "minja_error")],
    "GigaChat3-10B-A1.8B": [(TOOLS_ONLY, "float_repr"), (TOOL_CALLS, "minja_error")],
    "GigaChat3.1-10B-A1.8B": [(TOOLS_ONLY, "float_repr"), (TOOL_CALLS, "minja_error")],
    "HuggingFaceTB-SmolLM3-3B": [(TOOLS, "tool_polyfill")],
    "Kimi-K2-Instruct": [(TOOL_CALLS, "sandbox_mutation")],
    "Kimi-K2-Thinking": [(TOOL_CALLS, "sandbox_mutation")],
    "Kimi-K3": [(ALL, "minja_error")],
    "LFM2-8B-A1B": [(TOOL_CALLS, "tool_polyfill")],
    "LFM2.5-8B-A1B": [(TOOL_CALLS, "tool_polyfill")],
    "LFM2.5-Instruct": [(TOOL_CALLS, "tool_polyfill")],
    "MiniMax-M2": [(TOOLS, "minja_error")],
    "MiniMax-M3": [(TOOLS, "minja_error")],
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": [(TOOLS, "float_repr")],
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": [(NO_TOOLS, "undefined_lenient"), (TOOLS, "undefined_text")],
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": [(NO_TOOLS, "undefined_lenient"), (TOOLS, "undefined_text")],
    "Qwen3-Coder": [(TOOLS, "float_repr")],
    "Reka-Edge": [(TOOLS, "minja_error")],
    "Spark2.5": [(TOOL_CALLS, "tool_polyfill")],
    "StepFun3.5-Flash": [(ALL, "minja_error")],
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": [(TOOLS, "tool_polyfill")],
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": [(TOOLS, "tool_polyfill")],
    "deepseek-ai-DeepSeek-V3.1": [(TOOLS, "tool_polyfill")],
    "deepseek-ai-DeepSeek-V3.2": [(TOOL_CALLS, "tool_polyfill")],
    "deepseek-ai-DeepSeek-V4": [(TOOL_CALLS, "tool_polyfill")],
    "deepseek-ai-DeepSeek-V4-Flash-0731": [(TOOL_CALLS, "tool_polyfill")],
    "fireworks-ai-llama-3-firefunction-v2": [(NO_TOOLS, "undefined_lenient"), (TOOLS, "tool_polyfill")],
    "google-gemma-2-2b-it": [(SYSTEM, "system_polyfill"), (TOOLS, "tool_polyfill")],
    "ibm-granite-granite-3.3-2B-Instruct": [(TOOL_CALLS, "tool_polyfill")],
    "inclusionai-ling-3.0-flash": [(TOOL_CALLS, "tool_polyfill")],
    "llama-cpp-deepseek-r1": [(TOOLS, "tojson_generator")],
    "llama-cpp-rwkv-world": [(TOOLS, "tool_polyfill")],
    "meetkai-functionary-medium-v3.1": [(TOOLS, "markup_concat")],
    "meetkai-functionary-medium-v3.2": [(TOOLS_ONLY, "float_repr"), (TOOL_CALLS, "str_concat_dict")],
    "microsoft-Phi-3.5-mini-instruct": [(TOOLS, "tool_polyfill")],
    "mistralai-Ministral-3-14B-Reasoning-2512": [(TOOL_CALLS, "tool_polyfill")],
    "muse-glimmer": [(SYSTEM, "system_polyfill"), (TOOL_CALLS, "tool_polyfill")],
    "openbmb-MiniCPM5-1B": [(TOOLS, "minja_error")],
    "poolside-Laguna-S-2.1": [(TOOL_CALLS, "tool_polyfill")],
    "poolside-Laguna-XS-2.1": [(TOOL_CALLS, "tool_polyfill")],
    "poolside-Laguna-XS.2": [(TOOL_CALLS, "tool_polyfill")],
    "tencent-Hy3": [(ALL, "minja_error")],
}


def declared_kind(template: str, case_id: str) -> str | None:
    """The declared divergence kind for (template, case id), or None when the two must agree."""
    for cases, kind in DIVERGENCES.get(template, ()):
        if case_id in cases:
            return kind
    return None
