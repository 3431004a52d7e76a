"""Tool-call parsing of generated text, for the formats models are taught by their chat templates.

* ``hermes`` (Hermes, Qwen 2/2.5/3): ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (repeatable)
* ``mistral``: ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]``
* ``llama3``: ``<|python_tag|>{"name": ..., "parameters": {...}}`` (or the bare JSON object as the whole answer)
* ``json``: the whole answer is one JSON object ``{"name", "arguments"|"parameters"}`` or a list of them

Calls come back OpenAI-shaped: ``{"type": "function", "function": {"name": str, "arguments": dict}}``.
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)


def _as_call(obj: Any) -> Optional[Dict[str, Any]]:
    if not isinstance(obj, dict):
        return None
    if "function" in obj and isinstance(obj["function"], dict):  # already OpenAI-shaped
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            pass
    return {"type": "function", "function": {"name": name, "arguments": args}}


def _calls_from_json(text: str) -> Optional[List[Dict[str, Any]]]:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    items = data if isinstance(data, list) else [data]
    calls = [_as_call(x) for x in items]
    if not calls or any(c is None for c in calls):
        return None
    return calls  # type: ignore[return-value]


def parse_tool_calls(text: str, fmt: Optional[str] = None) -> Tuple[str, List[Dict[str, Any]]]:
    """(remaining content, tool calls). ``fmt`` None tries every recognised format."""
    formats = [fmt] if fmt else ["hermes", "mistral", "llama3", "json"]
    for f in formats:
        if f == "hermes" and "<tool_call>" in text:
            calls = []
            for body in _HERMES.findall(text):
                got = _calls_from_json(body)
                if got:
                    calls.extend(got)
            if calls:
                rest = _HERMES.sub("", text).strip()
                return rest, calls
        elif f == "mistral" and "[TOOL_CALLS]" in text:
            head, _, body = text.partition("[TOOL_CALLS]")
            got = _calls_from_json(body.strip())
            if got:
                return head.strip(), got
        elif f == "llama3":
            if "<|python_tag|>" in text:
                head, _, body = text.partition("<|python_tag|>")
                body = body.replace("<|eom_id|>", "").replace("<|eot_id|>", "").strip()
                calls = []
                for part in body.split(";"):
                    got = _calls_from_json(part.strip())
                    if got:
                        calls.extend(got)
                if calls:
                    return head.strip(), calls
            elif text.strip().startswith("{"):
                got = _calls_from_json(text.strip())
                if got:
                    return "", got
        elif f == "json":
            stripped = text.strip()
            if stripped.startswith("```"):
                stripped = stripped.strip("`")
                if stripped.startswith("json"):
                    stripped = stripped[4:]
                stripped = stripped.strip()
            if stripped.startswith(("{", "[")):
                got = _calls_from_json(stripped)
                if got:
                    return "", got
    return text, []
