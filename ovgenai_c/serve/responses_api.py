"""OpenAI's Responses API: POST /v1/responses (what ``client.responses.create(...)`` and ``.stream(...)`` call).

The request's ``input`` (a string, or a list of items: messages with input/output text parts, the ``function_call``
items of an earlier answer and the ``function_call_output`` items that answer them) and ``instructions`` become one
chat; the answer comes back as output items — ``reasoning`` (a thinking model's), ``message`` (``output_text``) and
``function_call`` — whole, or streamed as the API's typed events (``response.created`` ... ``response.completed``).
Nothing is stored (``store`` is answered false): ``previous_response_id`` and the other stored-state features are
refused with 400 naming them, as is anything else the C API cannot honour, never ignored.
"""
from __future__ import annotations

import json
import time
import uuid
from typing import Any, Dict, List, Optional

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..provider import IMAGES_REFUSED
from ..provider.errors import OptionError
from ..provider.options import check_options
from ..provider.thinking import CONTENT
from .errors import bad_request
from .generation import Ask, Generation
from .http import CleanupStreamingResponse, endpoint, read_json
from .openai_api import REASONING_EFFORTS, openai_tool_calls, token_limit

# accepted and answered as they are, without effect here
ECHOED = {"metadata", "user", "store", "parallel_tool_calls", "truncation", "include", "service_tier",
          "prompt_cache_key", "safety_identifier", "stream_options"}
FIELDS = ECHOED | {"model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream", "tools",
                   "tool_choice", "reasoning", "text", "previous_response_id", "background", "top_logprobs",
                   "conversation", "prompt"}
ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _check(body: Dict[str, Any]) -> None:
    for name in body:
        if name not in FIELDS:
            raise bad_request(f"unknown or unsupported parameter {name!r}", name, "unknown_parameter")
    for name, why in (("previous_response_id", "responses are not stored here: send the whole conversation in "
                                                "'input'"),
                      ("conversation", "conversations are not stored here: send the whole conversation in 'input'"),
                      ("prompt", "stored prompt templates are not available here"),
                      ("background", "background responses are not available here"),
                      ("top_logprobs", "log-probabilities are not available through the GenAI C API")):
        if body.get(name):
            raise bad_request(f"{name} is not supported: {why}", name, "unsupported_parameter")
    if body.get("stream") is not None and not isinstance(body["stream"], bool):
        raise bad_request(f"'stream' must be a boolean, got {body['stream']!r}", "stream")
    text = body.get("text")
    if text is not None and not isinstance(text, dict):
        raise bad_request("'text' must be an object", "text")
    fmt = None if text is None else text.get("format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
        kind = fmt.get("type") if isinstance(fmt, dict) else fmt
        raise bad_request(f"text.format {kind!r} is not supported (only 'text'): constrained output is not "
                          "available through the GenAI C API", "text", "unsupported_parameter")
    include = body.get("include")
    if include is not None and (not isinstance(include, list) or not all(isinstance(x, str) for x in include)):
        raise bad_request("'include' must be a list of strings", "include")


def _options(body: Dict[str, Any]) -> Dict[str, Any]:
    """The provider's options of a request: max_output_tokens (as the chat route's max_tokens), temperature, top_p."""
    opts: Dict[str, Any] = {}
    limit = token_limit(body, "max_output_tokens")
    if limit is not None:
        opts["num_predict"] = limit
    for name in ("temperature", "top_p"):
        if body.get(name) is not None:
            opts[name] = body[name]
    try:  # the provider's rules, named as sent
        check_options(opts)
    except OptionError as exc:
        raise bad_request(str(exc), exc.option) from None
    return opts


def _think(body: Dict[str, Any]) -> Optional[bool]:
    """``reasoning.effort``: "none" turns a thinking model's reasoning off, any other effort on (a model without
    the switch refuses "on"); unset: the template's default."""
    reasoning = body.get("reasoning")
    if reasoning is None:
        return None
    if not isinstance(reasoning, dict):
        raise bad_request("'reasoning' must be an object", "reasoning")
    unknown = sorted(set(reasoning) - {"effort", "summary", "generate_summary"})
    if unknown:
        raise bad_request(f"reasoning.{unknown[0]} is not supported", "reasoning", "unsupported_parameter")
    effort = reasoning.get("effort")
    if effort is None:
        return None
    if effort not in REASONING_EFFORTS:
        raise bad_request(f"reasoning.effort must be one of {', '.join(REASONING_EFFORTS)}, got {effort!r}",
                          "reasoning", "invalid_value")
    return effort != "none"


def _text(content: Any, where: str) -> str:
    """A message's content: a string, or a list of input_text / output_text parts (images refused)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(f"{where}.content must be a string or a list of content parts", "input")
    parts = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_image", "image_url", "input_file", "input_audio"):
            why = IMAGES_REFUSED if kind in ("input_image", "image_url") else "only text can be served"
            raise bad_request(f"{where}.content[{i}]: a {kind} part cannot be served: {why}", "input",
                              "unsupported_content")
        if kind not in ("input_text", "output_text", "text") or not isinstance(part.get("text"), str):
            raise bad_request(f"{where}.content[{i}]: only input_text / output_text parts are supported, got type "
                              f"{kind!r}", "input", "unsupported_content")
        parts.append(part["text"])
    return "".join(parts)


def _arguments(value: Any, where: str) -> Any:
    if not isinstance(value, str):
        raise bad_request(f"{where}.arguments must be a JSON string", "input")
    try:
        return json.loads(value)
    except ValueError:
        return value


def convert_input(body: Dict[str, Any]) -> List[Dict[str, Any]]:
    """``instructions`` and ``input`` → the provider's message dicts (an answer's function calls joined to its
    assistant message; tool outputs as tool messages; reasoning items left out, as chat templates drop them)."""
    messages: List[Dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise bad_request("'instructions' must be a string", "instructions")
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise bad_request("'input' must be a string or a non-empty list of input items", "input")
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise bad_request(f"{where} must be an object", "input")
        kind = item.get("type", "message")
        if kind == "message":
            role = ROLES.get(item.get("role"))  # type: ignore[arg-type]
            if role is None:
                raise bad_request(f"{where}: unknown role {item.get('role')!r}", "input")
            messages.append({"role": role, "content": _text(item.get("content"), where)})
        elif kind == "function_call":
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise bad_request(f"{where}.name must be a non-empty string", "input")
            call = {"type": "function", "function": {"name": name,
                                                     "arguments": _arguments(item.get("arguments"), where)}}
            if isinstance(item.get("call_id"), str):
                call["id"] = item["call_id"]
            if not messages or messages[-1]["role"] != "assistant":  # (else: the calls of that answer)
                messages.append({"role": "assistant", "content": ""})
            messages[-1].setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            output = item.get("output")
            if not isinstance(output, str):
                output = _text(output, where) if isinstance(output, list) else json.dumps(output)
            msg = {"role": "tool", "content": output}
            if isinstance(item.get("call_id"), str):
                msg["tool_call_id"] = item["call_id"]
            messages.append(msg)
        elif kind == "reasoning":
            continue
        else:
            raise bad_request(f"{where}: input items of type {kind!r} are not supported", "input",
                              "unsupported_content")
    if not any(m["role"] != "system" for m in messages):
        raise bad_request("'input' has no message to answer", "input")
    return messages


def convert_tools(body: Dict[str, Any]) -> Optional[List[Dict[str, Any]]]:
    """The Responses API's function tools (flat: ``{"type": "function", "name", "description", "parameters"}``)
    in the chat form templates take; other tool types are refused."""
    tools, choice = body.get("tools"), body.get("tool_choice")
    if choice not in (None, "auto", "none"):
        raise bad_request(f"tool_choice={choice!r} is not supported (only 'auto' and 'none'): the model cannot be "
                          "forced to call a tool", "tool_choice", "unsupported_parameter")
    if tools is None or choice == "none":
        return None
    if not isinstance(tools, list):
        raise bad_request("'tools' must be a list of tool objects", "tools")
    out = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else type(tool).__name__
            raise bad_request(f"tools[{i}]: tools of type {kind!r} are not available here (only 'function')",
                              "tools", "unsupported_parameter")
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise bad_request(f"tools[{i}].name must be a non-empty string", "tools")
        fn = {"name": tool["name"]}
        for key in ("description", "parameters"):
            if tool.get(key) is not None:
                fn[key] = tool[key]
        out.append({"type": "function", "function": fn})
    return out or None


class ResponseBuilder:
    """The response object and its output items as they are made, for the whole answer and for the events."""

    def __init__(self, body: Dict[str, Any], model: str) -> None:
        self.id = _new_id("resp")
        self.created_at = int(time.time())
        self.body = body
        self.model = model
        self.output: List[Dict[str, Any]] = []
        self.sequence = 0

    def response(self, status: str, usage: Optional[Dict[str, Any]] = None,
                 incomplete: Optional[str] = None) -> Dict[str, Any]:
        b = self.body
        return {"id": self.id, "object": "response", "created_at": self.created_at, "status": status,
                "background": False, "error": None,
                "incomplete_details": {"reason": incomplete} if incomplete else None,
                "instructions": b.get("instructions"), "max_output_tokens": b.get("max_output_tokens"),
                "model": self.model, "output": list(self.output), "parallel_tool_calls": True,
                "previous_response_id": None, "reasoning": b.get("reasoning") or {"effort": None, "summary": None},
                "store": False, "temperature": b.get("temperature"), "text": {"format": {"type": "text"}},
                "tool_choice": b.get("tool_choice") or "auto", "tools": b.get("tools") or [],
                "top_p": b.get("top_p"), "truncation": "disabled", "usage": usage, "user": b.get("user"),
                "metadata": b.get("metadata") or {}}

    @staticmethod
    def usage(res: Any) -> Dict[str, Any]:
        u = res.usage
        return {"input_tokens": u["prompt_tokens"], "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": u["completion_tokens"], "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": u["total_tokens"]}

    @staticmethod
    def reasoning_item(text: str, status: str = "completed") -> Dict[str, Any]:
        return {"type": "reasoning", "id": _new_id("rs"), "summary": [],
                "content": [{"type": "reasoning_text", "text": text}] if text else [], "status": status}

    @staticmethod
    def message_item(text: Optional[str], status: str = "completed") -> Dict[str, Any]:
        content = [] if text is None else [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
        return {"type": "message", "id": _new_id("msg"), "status": status, "role": "assistant", "content": content}

    @staticmethod
    def call_items(calls: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        return [{"type": "function_call", "id": _new_id("fc"), "call_id": c["id"], "name": c["function"]["name"],
                 "arguments": c["function"]["arguments"], "status": "completed"}
                for c in openai_tool_calls(calls)]

    def items_of(self, res: Any) -> List[Dict[str, Any]]:
        """The output items of a whole answer."""
        items = []
        if res.message.get("thinking"):
            items.append(self.reasoning_item(res.message["thinking"]))
        if res.text or not res.tool_calls:
            items.append(self.message_item(res.text))
        return items + self.call_items(res.tool_calls)

    def event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return f"event: {kind}\ndata: ".encode() + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


def _final_status(res: Any) -> tuple:
    """(status, incomplete reason) of a finished answer."""
    if res.finish_reason == "length":
        return "incomplete", "max_output_tokens"
    return "completed", None


class ResponsesRoutes:
    def __init__(self, state: Any) -> None:
        self.state = state

    def routes(self) -> List[Route]:
        return [Route("/v1/responses", self.create, methods=["POST"])]

    @endpoint(ollama=False)
    async def create(self, request: Request) -> Response:
        body = await read_json(request, self.state.config.max_body_bytes)
        _check(body)
        tools = convert_tools(body)
        ask = Ask(convert_input(body), tools=tools, options=_options(body), think=_think(body))
        gen = await Generation.start(self.state.registry, body.get("model"), ask, self.state.config.request_timeout)
        out = ResponseBuilder(body, gen.slot.name)
        if not body.get("stream"):
            res = await gen.answer(request.receive)
            if res is None:
                return Response(status_code=499)
            out.output = out.items_of(res)
            status, incomplete = _final_status(res)
            return JSONResponse(out.response(status, out.usage(res), incomplete))
        return CleanupStreamingResponse(self._events(gen, out, bool(tools)), gen.close,
                                        media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    async def _events(self, gen: Generation, out: ResponseBuilder, tools: bool) -> Any:
        """The typed events of a streamed answer: each output item opened, its text as deltas, closed; the
        response completed (or incomplete, or failed with an ``error`` event first). With tools the answer is
        sent whole at the end (its text may turn out to be a tool call)."""
        open_item: Optional[Dict[str, Any]] = None  # the reasoning or message item being streamed
        text: List[str] = []

        def close_open() -> List[bytes]:
            nonlocal open_item
            if open_item is None:
                return []
            item, index, whole = open_item, len(out.output), "".join(text)
            events = []
            if item["type"] == "reasoning":
                item["content"] = [{"type": "reasoning_text", "text": whole}]
                events.append(out.event("response.reasoning_text.done", item_id=item["id"], output_index=index,
                                        content_index=0, text=whole))
            else:
                part = {"type": "output_text", "text": whole, "annotations": [], "logprobs": []}
                item["content"] = [part]
                events.append(out.event("response.output_text.done", item_id=item["id"], output_index=index,
                                        content_index=0, text=whole, logprobs=[]))
                events.append(out.event("response.content_part.done", item_id=item["id"], output_index=index,
                                        content_index=0, part=part))
            item["status"] = "completed"
            events.append(out.event("response.output_item.done", output_index=index, item=item))
            out.output.append(item)
            open_item = None
            text.clear()
            return events

        def open_new(kind: str) -> List[bytes]:
            nonlocal open_item
            item = out.reasoning_item("", "in_progress") if kind != CONTENT else out.message_item(None, "in_progress")
            open_item = item
            index = len(out.output)
            events = [out.event("response.output_item.added", output_index=index, item=dict(item))]
            if kind == CONTENT:
                events.append(out.event("response.content_part.added", item_id=item["id"], output_index=index,
                                        content_index=0, part={"type": "output_text", "text": "", "annotations": [],
                                                               "logprobs": []}))
            return events

        try:
            yield out.event("response.created", response=out.response("in_progress"))
            yield out.event("response.in_progress", response=out.response("in_progress"))
            while True:
                try:
                    pieces = await gen.next_pieces()
                except Exception as exc:
                    from .errors import openai_body, to_http

                    err = openai_body(to_http(exc))["error"]
                    yield out.event("error", code=err.get("code"), message=err.get("message"),
                                    param=err.get("param"))
                    failed = out.response("failed")
                    failed["error"] = {"code": err.get("code") or "server_error", "message": err.get("message")}
                    yield out.event("response.failed", response=failed)
                    return
                if pieces is None:
                    break
                for kind, piece in ([] if tools else pieces):
                    want = "reasoning" if kind != CONTENT else "message"
                    if open_item is not None and open_item["type"] != want:
                        for e in close_open():
                            yield e
                    if open_item is None:
                        for e in open_new(kind):
                            yield e
                    text.append(piece)
                    index = len(out.output)
                    delta_kind = "response.output_text.delta" if kind == CONTENT else \
                        "response.reasoning_text.delta"
                    extra = {"logprobs": []} if kind == CONTENT else {}
                    yield out.event(delta_kind, item_id=open_item["id"], output_index=index, content_index=0,
                                    delta=piece, **extra)
            res = gen.result
            for e in close_open():
                yield e
            if res is not None and tools:  # buffered: every item whole now
                for item in out.items_of(res):
                    index = len(out.output)
                    yield out.event("response.output_item.added", output_index=index,
                                    item=dict(item, status="in_progress"))
                    if item["type"] == "reasoning":
                        whole = item["content"][0]["text"]
                        yield out.event("response.reasoning_text.delta", item_id=item["id"], output_index=index,
                                        content_index=0, delta=whole)
                        yield out.event("response.reasoning_text.done", item_id=item["id"], output_index=index,
                                        content_index=0, text=whole)
                    elif item["type"] == "function_call":
                        yield out.event("response.function_call_arguments.delta", item_id=item["id"],
                                        output_index=index, delta=item["arguments"])
                        yield out.event("response.function_call_arguments.done", item_id=item["id"],
                                        output_index=index, arguments=item["arguments"], name=item["name"])
                    elif item["type"] == "message":
                        part = item["content"][0]
                        yield out.event("response.content_part.added", item_id=item["id"], output_index=index,
                                        content_index=0, part=dict(part, text=""))
                        yield out.event("response.output_text.delta", item_id=item["id"], output_index=index,
                                        content_index=0, delta=part["text"], logprobs=[])
                        yield out.event("response.output_text.done", item_id=item["id"], output_index=index,
                                        content_index=0, text=part["text"], logprobs=[])
                        yield out.event("response.content_part.done", item_id=item["id"], output_index=index,
                                        content_index=0, part=part)
                    yield out.event("response.output_item.done", output_index=index, item=item)
                    out.output.append(item)
            if res is None:
                return
            status, incomplete = _final_status(res)
            kind = "response.completed" if status == "completed" else "response.incomplete"
            yield out.event(kind, response=out.response(status, out.usage(res), incomplete))
        finally:
            await gen.close()
