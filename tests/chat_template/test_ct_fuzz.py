"""Differential fuzzing (fixed seeds) of the native renderer against jinja2: random whitespace-control layouts and
random expressions built from literals, operators, filters, tests and methods. Every case must render identically
or fail in both."""
from __future__ import annotations

import copy
import random

import pytest

from hf_jinja import hf_render

WS_TEXT = ["\n", "  ", "\t", "x", " y ", "\n  ", "  \n", "\n\n", "z\n"]


def _ws_template(rng: random.Random, depth: int = 0) -> str:
    def tag(body: str, var: bool = False, comment: bool = False) -> str:
        if var:
            return "{{%s 'v' %s}}" % (rng.choice(["", "-"]), rng.choice(["", "-"]))
        left, right = rng.choice(["", "-", "+"]), rng.choice(["", "-", "+"])
        if comment:
            return "{#%s c %s#}" % (left, right)
        return "{%%%s %s %s%%}" % (left, body, right)

    out = []
    for _ in range(rng.randint(1, 6)):
        c = rng.random()
        if c < 0.45:
            out.append(rng.choice(WS_TEXT))
        elif c < 0.6:
            out.append(tag("", var=True))
        elif c < 0.7:
            out.append(tag("", comment=True))
        elif c < 0.8:
            out.append(tag("set a = 1"))
        elif depth < 3:
            kw = rng.choice(["if", "for"])
            head = "if true" if kw == "if" else "for i in [1, 2]"
            body = tag(head) + _ws_template(rng, depth + 1)
            if rng.random() < 0.3:
                body += tag("else") + _ws_template(rng, depth + 1)
            out.append(body + tag("end" + kw))
        else:
            out.append("{% raw %}" + rng.choice(WS_TEXT) + "{{ raw }}" + rng.choice(WS_TEXT) + "{%- endraw %}")
    return "".join(out)


ATOMS = ["0", "1", "-2", "3", "2.5", "0.1", "1e3", "'a'", "'Hello World'", "''", "'x,y, z'", "none", "true", "false",
         "[1, 2, 3]", "[]", "['b', 'a']", "{'k': 1, 'j': 'v'}", "{}", "(1, 'a')", "n", "s", "xs", "d", "missing",
         "msgs", "msgs[0]", "d.k", "d['j']", "xs[1:]", "s[::-1]"]
BINOPS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"]
FILTERS = ["length", "string", "upper", "lower", "trim", "first", "last", "list", "int", "float", "abs", "round",
           "tojson", "join(',')", "default('D')", "sort", "reverse|list", "unique|list", "items|list", "dictsort",
           "capitalize", "title", "replace('a', 'b')", "select('odd')|list", "map('string')|list", "sum", "min",
           "max", "count", "batch(2)|list", "selectattr('role')|list", "map(attribute='role')|list",
           "tojson(indent=1)", "safe", "e", "int(7)", "float(1.5)", "round(1, 'floor')", "wordcount"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable",
         "sequence", "odd", "even", "divisibleby 2", "true", "false", "boolean", "in [1, 'a']", "eq 1", "lower",
         "upper", "callable", "gt 1", "le 'b'"]
METHODS = ["upper()", "lower()", "strip()", "split(',')", "startswith('H')", "endswith('d')", "replace('l', 'L')",
           "title()", "find('o')", "count('l')", "get('k')", "get('zz', 0)", "split()", "lstrip('H')",
           "capitalize()", "index(2)", "format(1)", "isdigit()", "splitlines()", "rstrip()", "rsplit(' ', 1)"]


def _expr(rng: random.Random, d: int = 0) -> str:
    c = rng.random()
    if d > 3 or c < 0.3:
        return rng.choice(ATOMS)
    if c < 0.5:
        return "(%s %s %s)" % (_expr(rng, d + 1), rng.choice(BINOPS), _expr(rng, d + 1))
    if c < 0.65:
        return "(%s|%s)" % (_expr(rng, d + 1), rng.choice(FILTERS))
    if c < 0.75:
        return "(%s is %s%s)" % (_expr(rng, d + 1), rng.choice(["", "not "]), rng.choice(TESTS))
    if c < 0.85:
        return "%s.%s" % (rng.choice(["s", "d", "xs", "'ab c'", "n", "msgs[0]", "none"]), rng.choice(METHODS))
    if c < 0.92:
        return "(%s if %s else %s)" % (_expr(rng, d + 1), _expr(rng, d + 1), _expr(rng, d + 1))
    if c < 0.96:
        return "(not %s)" % _expr(rng, d + 1)
    return "[%s, %s][%s]" % (_expr(rng, d + 1), _expr(rng, d + 1), rng.choice(["0", "1", "-1", "5", "0:1"]))


EXPR_CTX = {"messages": [], "n": 7, "s": "Hello, World", "xs": [3, 1, 2], "d": {"k": 1, "j": "v"},
            "msgs": [{"role": "user", "content": "hi"}]}


def _diff(ct_harness, hf_env, templates, ctx):
    results = ct_harness.batch([{"template": t, "context": ctx} for t in templates])
    bad = []
    for t, r in zip(templates, results):
        ok, exp = hf_render(hf_env, t, copy.deepcopy(ctx))  # filters like indent may mutate lists in Python
        if (ok and r.get("ok") != exp) or (not ok and "error" not in r):
            bad.append((t, exp, r))
    return bad


@pytest.mark.parametrize("seed", [1, 2])
def test_whitespace_control_fuzz(ct_harness, hf_env, seed):
    rng = random.Random(seed)
    templates = [_ws_template(rng) for _ in range(1000)]
    bad = _diff(ct_harness, hf_env, templates, {"messages": []})
    assert not bad, f"{len(bad)} mismatches, first: {bad[0]!r}"


@pytest.mark.parametrize("seed", [11, 12])
def test_expression_fuzz(ct_harness, hf_env, seed):
    rng = random.Random(seed)
    templates = ["{{ %s }}" % _expr(rng) for _ in range(1000)]
    bad = _diff(ct_harness, hf_env, templates, EXPR_CTX)
    assert not bad, f"{len(bad)} mismatches, first: {bad[0]!r}"


STMT_VARS = ["a", "b", "c", "n", "s", "xs"]


def _stmts(rng: random.Random, d: int = 0) -> str:
    out = []
    for _ in range(rng.randint(1, 4)):
        c = rng.random()
        if c < 0.25:
            out.append("{{ %s }}" % rng.choice([_expr(rng, 2), rng.choice(STMT_VARS), "ns.v",
                                                "loop.index if loop is defined else 'L'"]))
        elif c < 0.4:
            out.append("{%% set %s = %s %%}" % (rng.choice(STMT_VARS), _expr(rng, 2)))
        elif c < 0.48:
            out.append("{%% set ns.v = %s %%}" % _expr(rng, 3))
        elif c < 0.6 and d < 3:
            out.append("{%% if %s %%}%s{%% elif %s %%}%s{%% else %%}%s{%% endif %%}" % (
                _expr(rng, 2), _stmts(rng, d + 1), _expr(rng, 3), _stmts(rng, d + 1), _stmts(rng, d + 1)))
        elif c < 0.72 and d < 3:
            it = rng.choice(["xs", "[1, 2]", "s", "d", "msgs", "range(3)", "[]", "missing", "xs|reverse", "d|dictsort"])
            body = _stmts(rng, d + 1)
            if rng.random() < 0.3:
                body += rng.choice(["{% if loop.index > 1 %}{% break %}{% endif %}", "{% continue %}"])
            out.append("{%% for %s in %s %%}%s{%% else %%}E{%% endfor %%}" % (rng.choice(["a", "b", "k"]), it, body))
        elif c < 0.8 and d < 3:
            out.append("{%% macro mm(p, q=%s) %%}%s{%% endmacro %%}{{ mm(%s) }}" % (
                _expr(rng, 3), _stmts(rng, d + 1), _expr(rng, 3)))
        else:
            out.append(rng.choice(["\n", " ", "x", "{#c#}"]))
    return "".join(out)


@pytest.mark.parametrize("seed", [21])
def test_statement_fuzz(ct_harness, hf_env, seed):
    rng = random.Random(seed)
    templates = ["{% set ns = namespace(v=0) %}" + _stmts(rng) + "|{{ ns.v }}" for _ in range(600)]
    bad = _diff(ct_harness, hf_env, templates, EXPR_CTX)
    assert not bad, f"{len(bad)} mismatches, first: {bad[0]!r}"


CONV_TEXTS = ["Hi", "", "  padded  ", "multi\nline\n", "quote ' \" \\ <tag> & {{ not jinja }}", "Ünï 日本 🙂",
              "<think>x</think>answer", "a" * 50]


def _random_conversation(rng: random.Random) -> dict:
    from conversations import TOOLS

    def content():
        c = rng.random()
        if c < 0.7:
            return rng.choice(CONV_TEXTS)
        if c < 0.85:
            return [{"type": "text", "text": rng.choice(CONV_TEXTS)}]
        if c < 0.95:
            return None
        return [{"type": "text", "text": "a"}, {"type": "image"}]

    def msg(role):
        m = {"role": role, "content": content()}
        if role == "assistant" and rng.random() < 0.3:
            args = {"location": "Paris"} if rng.random() < 0.5 else '{"location": "Paris"}'
            m["tool_calls"] = [{"id": "a1b2c3d4e", "type": "function",
                                "function": {"name": "get_weather", "arguments": args}}]
        if role == "assistant" and rng.random() < 0.2:
            m["reasoning_content"] = rng.choice(CONV_TEXTS)
        if role == "tool":
            m["tool_call_id"] = "a1b2c3d4e"
            m["name"] = "get_weather"
        return m

    msgs = [msg("system")] if rng.random() < 0.4 else []
    for _ in range(rng.randint(1, 5)):
        msgs.append(msg("user"))
        if rng.random() < 0.8:
            msgs.append(msg("assistant"))
        if rng.random() < 0.2:
            msgs.append(msg("tool"))
    ctx = {"messages": msgs, "add_generation_prompt": rng.random() < 0.5, "bos_token": "<s>", "eos_token": "</s>",
           "tools": TOOLS if rng.random() < 0.3 else None}
    if rng.random() < 0.3:
        ctx["enable_thinking"] = rng.random() < 0.5
    return ctx


def test_real_templates_random_conversations(ct_harness, hf_env, real_templates):
    """Random conversation shapes (content parts, None content, tool calls with dict or string arguments,
    reasoning_content, tools, enable_thinking) over all real templates."""
    rng = random.Random(7)
    names = sorted(real_templates)
    compiled = {n: hf_env.from_string(real_templates[n]) for n in names}
    jobs = [(rng.choice(names), _random_conversation(rng)) for _ in range(500)]
    results = ct_harness.batch([{"template": real_templates[n], "context": c} for n, c in jobs])
    bad, rendered = [], 0
    for (name, ctx), r in zip(jobs, results):
        try:
            ok, exp = True, compiled[name].render(**copy.deepcopy(ctx))
        except Exception as e:  # noqa: BLE001
            ok, exp = False, f"{type(e).__name__}: {e}"
        rendered += ok
        if (ok and r.get("ok") != exp) or (not ok and "error" not in r):
            bad.append((name, ctx, exp, r))
    assert not bad, f"{len(bad)} mismatches, first: {bad[0]!r}"
    assert rendered > 200  # most cases really render (not a suite of matching errors)
