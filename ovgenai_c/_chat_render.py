"""Chat-template rendering for ``Tokenizer.apply_chat_template``: the bundled backend's C++ Jinja engine
(``ovgenai_c_bundled_render_chat_template``, cdefs/91) when the loaded library exports it, else Python's jinja2
configured like Hugging Face transformers, else NotSupportedError."""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Dict, List

from . import _loader, errors
from ._capi import bind, chat_template

_EXTRA = chat_template.RENDER


def _dumps(value: Any, what: str) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise errors.InvalidParameterError(f"{what} is not JSON-serialisable: {exc}") from None


def has_bundled_renderer() -> bool:
    """Whether the loaded GenAI library exports the bundled renderer (loads the library)."""
    return _loader.get_library().has_extra(_EXTRA)


def render(template: str, messages: List[Dict[str, Any]], tools: List[Any], context: Dict[str, Any],
           add_generation_prompt: bool) -> str:
    if "\0" in template:
        raise errors.InvalidParameterError("the chat template contains a NUL character")
    if has_bundled_renderer():
        return _render_bundled(template, messages, tools, context, add_generation_prompt)
    try:
        import jinja2  # noqa: F401
    except ImportError:
        raise errors.NotSupportedError(
            "apply_chat_template needs a chat-template engine: the loaded GenAI library "
            f"({_loader.get_library().path}) does not export {_EXTRA} (only ovgenai_c's bundled backend does) and "
            "jinja2 is not installed (pip install jinja2)") from None
    return _render_jinja2(template, messages, tools, context, add_generation_prompt)


def _render_bundled(template: str, messages: List[Dict[str, Any]], tools: List[Any], context: Dict[str, Any],
                    add_generation_prompt: bool) -> str:
    return chat_template.render(bind(_loader.get_library()), template.encode("utf-8"), _dumps(messages, "messages"),
                                _dumps(tools, "tools"), _dumps(context, "extra_context"), add_generation_prompt)


def _render_jinja2(template: str, messages: List[Dict[str, Any]], tools: List[Any], context: Dict[str, Any],
                   add_generation_prompt: bool) -> str:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt: str) -> str:
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    variables: Dict[str, Any] = {"messages": messages, "add_generation_prompt": add_generation_prompt}
    if tools:
        variables["tools"] = tools
    variables.update(context)
    try:
        return env.from_string(template).render(**variables)
    except jinja2.exceptions.TemplateError as exc:
        raise errors.GeneralError(f"failed to apply the chat template: {exc}") from None
