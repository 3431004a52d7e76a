"""Error behaviour of the native renderer: positions for syntax errors, raise_exception messages, and limits that
turn runaway templates into errors instead of crashes or hangs."""
from __future__ import annotations

import re

import pytest

from hf_jinja import hf_render

CTX = {"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": True}

SYNTAX = [
    # (template, line, col)
    ("{% if %}x{% endif %}", 1, 7),
    ("ok\n{{ 1 + }}", 2, 8),
    ("a\nb\n  {% for x in %}{% endfor %}", 3, 15),
    ("{% if true %}never closed", 1, 26),
    ("{{ x ", 1, 1),
    ("{# never closed", 1, 1),
    ("{% foo %}", 1, 4),
    ("{% for x in xs %}{% endif %}", 1, 21),
    ("{{ 'unterminated }}", 1, 4),
    ("{{ (1 + 2 }}", 1, 11),
    ("{{ [1, 2 }}", 1, 10),
    ("{% set %}", 1, 8),
    ("{{ x | }}", 1, 8),
    ("{% macro m( %}{% endmacro %}", 1, 14),
    ("{{ a.  }}", 1, 8),
    ("{{ 1 ) }}", 1, 6),
]


@pytest.mark.parametrize("template,line,col", SYNTAX)
def test_syntax_error_names_line_and_column(ct_harness, hf_env, template, line, col):
    res = ct_harness.render(template, CTX)
    assert res.returncode == 2
    err = res.stderr.decode()
    m = re.match(r"ERROR: chat template syntax error at (\d+):(\d+): .+", err)
    assert m, err
    assert (int(m.group(1)), int(m.group(2))) == (line, col), err
    ok, _ = hf_render(hf_env, template, CTX)
    assert not ok  # jinja2 rejects it too


def test_raise_exception_message_is_exact(ct_harness, hf_env):
    t = ("{% for m in messages %}{% if m.role == 'user' %}"
         "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
         "{% endif %}{% endfor %}")
    res = ct_harness.render(t, CTX)
    assert res.returncode == 2
    assert res.stderr.decode() == "ERROR: Conversation roles must alternate user/assistant/user/assistant/...\n"
    ok, msg = hf_render(hf_env, t, CTX)
    assert not ok and msg.endswith("Conversation roles must alternate user/assistant/user/assistant/...")


def test_raise_exception_inside_macro_and_expression(ct_harness):
    t = "{% macro check(x) %}{{ raise_exception('bad: ' ~ x) if x > 1 else 'ok' }}{% endmacro %}{{ check(1) }}{{ check(2) }}"
    res = ct_harness.render(t, CTX)
    assert res.returncode == 2
    assert res.stderr.decode() == "ERROR: bad: 2\n"


def test_undefined_misuse_messages(ct_harness):
    res = ct_harness.render("{{ foo.bar }}", CTX)
    assert res.returncode == 2 and res.stderr.decode() == "ERROR: 'foo' is undefined\n"
    res = ct_harness.render("{{ messages[0].missing.deeper }}", CTX)
    assert res.returncode == 2 and res.stderr.decode() == "ERROR: 'dict object' has no attribute 'missing'\n"


def _assert_error(res, pattern):
    assert res.returncode == 2, (res.returncode, res.stdout[:200], res.stderr[:500])
    assert re.search(pattern, res.stderr.decode()), res.stderr.decode()


def test_infinite_macro_recursion_is_an_error(ct_harness):
    res = ct_harness.render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", CTX)
    _assert_error(res, "maximum macro call depth exceeded")


def test_mutual_recursion_via_caller_is_an_error(ct_harness):
    t = "{% macro a() %}{% call a() %}x{% endcall %}{% endmacro %}{{ a() }}"
    _assert_error(ct_harness.render(t, CTX), "depth exceeded")


def test_deeply_nested_expression_is_a_syntax_error(ct_harness):
    _assert_error(ct_harness.render("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", CTX), "nesting too deep")
    _assert_error(ct_harness.render("{{ " + "[" * 5000 + "]" * 5000 + " }}", CTX), "nesting too deep")
    _assert_error(ct_harness.render("{{ " + "not " * 5000 + "x }}", CTX), "nesting too deep")
    _assert_error(ct_harness.render("{{ x" + ".a" * 200000 + " }}", CTX), "nesting too deep")
    _assert_error(ct_harness.render("{{ 1" + " + 1" * 200000 + " }}", CTX), "nesting too deep")
    _assert_error(ct_harness.render("{{ x" + "|string" * 200000 + " }}", CTX), "nesting too deep")
    _assert_error(ct_harness.render("{{ x" + " or x" * 200000 + " }}", CTX), "nesting too deep")


def test_deeply_nested_blocks_are_a_syntax_error(ct_harness):
    t = "{% if true %}" * 3000 + "x" + "{% endif %}" * 3000
    _assert_error(ct_harness.render(t, CTX), "nesting too deep")


def test_deeply_nested_context_json_is_rejected(ct_harness):
    import subprocess

    tpath = ct_harness._file("{{ messages }}", ".jinja")
    cpath = ct_harness._file('{"messages": ' + "[" * 100000 + "]" * 100000 + "}", ".json")
    res = subprocess.run([str(ct_harness.exe), str(tpath), str(cpath)], capture_output=True, timeout=60)
    assert res.returncode in (2, 3)
    assert b"nesting too deep" in res.stderr


def test_runaway_loops_hit_the_step_limit(ct_harness):
    # 10^10 steps without the limit: the "step limit" error is what ends it (the harness run has its own timeout)
    res = ct_harness.render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", CTX)
    _assert_error(res, "step limit")


def test_huge_output_is_an_error(ct_harness):
    _assert_error(ct_harness.render("{{ 'x' * 1000000000 }}", CTX), "too large")
    t = "{% set s = 'x' * 1000000 %}{% for i in range(100000) %}{{ s }}{% endfor %}"
    _assert_error(ct_harness.render(t, CTX), "too large")


def test_huge_range_is_an_error(ct_harness):
    _assert_error(ct_harness.render("{{ range(100001)|length }}", CTX), "MAX_RANGE")
    res = ct_harness.render("{{ range(100000)|length }}", CTX)
    assert res.returncode == 0 and res.stdout == b"100000"


def test_context_must_be_an_object(ct_harness):
    _assert_error(ct_harness.render("x", [1, 2]), "must be a JSON object")


def test_deeply_nested_runtime_values_do_not_crash(ct_harness):
    build = "{% set ns = namespace(x=[]) %}{% for j in range(10) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}" \
            "{% endfor %}{% endfor %}"
    res = ct_harness.render(build + "{{ ns.x|length }}", CTX)  # freeing a 1M-deep list must not overflow the stack
    assert res.returncode == 0 and res.stdout == b"1"
    _assert_error(ct_harness.render(build + "{{ ns.x }}", CTX), "nested too deeply")
    _assert_error(ct_harness.render(build + "{{ ns.x|tojson }}", CTX), "nested too deeply")


def test_cyclic_namespace_does_not_crash(ct_harness):
    t = "{% set ns = namespace() %}{% set ns.me = ns %}"
    _assert_error(ct_harness.render(t + "{{ ns }}", CTX), "nested too deeply")
    res = ct_harness.render(t + "{{ ns.me.me.me is defined }}", CTX)
    assert res.returncode == 0 and res.stdout == b"True"


def test_string_blowups_are_errors(ct_harness):
    big = "{% set s = 'x' * 1000000 %}"
    _assert_error(ct_harness.render(big + "{{ s|replace('x', s) }}", CTX), "too large")
    _assert_error(ct_harness.render(big + "{{ s.replace('', s) }}", CTX), "too large")
    _assert_error(ct_harness.render(big + "{% set ns = namespace(v=s) %}{% for i in range(20) %}{% set ns.v = ns.v + ns.v %}{% endfor %}", CTX), "too large")
    _assert_error(ct_harness.render(big + "{% set ns = namespace(v=s) %}{% for i in range(20) %}{% set ns.v = ns.v ~ ns.v %}{% endfor %}", CTX), "too large")
    _assert_error(ct_harness.render("{% set ns = namespace(v=[1]) %}{% for i in range(40) %}{% set ns.v = ns.v + ns.v %}{% endfor %}", CTX), "too large")
    _assert_error(ct_harness.render("{{ 'x'|center(999999999999) }}", CTX), "too large")
    _assert_error(ct_harness.render("{{ '%9999999999d' % 1 }}", CTX), "too large")


def test_integer_overflow_is_defined(ct_harness, hf_env):
    t = "{{ 9223372036854775807 + 1 > 0 }}|{{ (-9223372036854775807 - 1) // -1 > 0 }}|{{ 2 ** 70 > 2 ** 69 }}|{{ 3e30|int > 0 }}"
    res = ct_harness.render(t, CTX)
    assert res.returncode == 0
    assert res.stdout.decode() == hf_render(hf_env, t, CTX)[1] == "True|True|True|True"


def test_quadratic_work_hits_the_step_limit(ct_harness):
    big = "{% set big = range(100000)|list %}"
    _assert_error(ct_harness.render(big + "{% for i in range(100000) %}{{ i in big }}{% endfor %}", CTX), "step limit")
    _assert_error(ct_harness.render("{% set s = 'x' * 10000000 %}{% for i in range(100000) %}{{ 'y' in s }}{% endfor %}", CTX),
                  "step limit")
    _assert_error(ct_harness.render(big + "{% for i in range(100000) %}{{ big|length }}{{ big[1:]|length }}{% endfor %}", CTX),
                  "step limit")
    _assert_error(ct_harness.render("{{ [1]|batch(10000000000, 'x')|list }}", CTX), "too large")
    res = ct_harness.render(big + "{{ big|unique|list|length }}|{{ (big + big)|unique|list|length }}", CTX)
    assert res.returncode == 0 and res.stdout == b"100000|100000"


def test_extreme_slice_steps(ct_harness, hf_env):
    t = "{{ [1, 2, 3][1::9223372036854775807] }}|{{ [1, 2, 3][::-9223372036854775807] }}|{{ 'abc'[::9223372036854775807] }}"
    res = ct_harness.render(t, CTX)
    assert res.returncode == 0
    assert res.stdout.decode() == hf_render(hf_env, t, CTX)[1]
