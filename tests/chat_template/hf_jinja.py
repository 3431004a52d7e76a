"""The chat-template oracle: Python jinja2 configured the way Hugging Face transformers renders chat templates.
(A module of its own, not conftest.py: with several test folders in one pytest run, "conftest" may name another
folder's conftest.)"""
from __future__ import annotations

import json
from datetime import datetime


def make_hf_env():
    """jinja2 environment configured like transformers' chat-template rendering."""
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class AssistantTracker(Extension):
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

        def _generation_support(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def hf_render(env, template: str, context: dict) -> tuple[bool, str]:
    """(True, text) or (False, error message)."""
    ctx = dict(context)
    ctx.setdefault("tools", None)
    ctx.setdefault("documents", None)
    try:
        return True, env.from_string(template).render(**ctx)
    except Exception as e:  # noqa: BLE001 - any template failure is an expected outcome to compare
        return False, f"{type(e).__name__}: {e}"
