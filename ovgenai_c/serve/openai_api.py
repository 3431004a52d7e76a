"""OpenAI-compatible routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models[/{id}].

Unknown request fields and features the C API cannot honour (n > 1, logprobs, response_format other than text,
a forced tool_choice...) are refused with 400 naming the field, never ignored. Unset ``temperature`` keeps the
model's own generation config (GenAI's default), unlike OpenAI's sampling at 1.0.
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
from .errors import HTTPError, bad_request
from .generation import Ask, Generation
from .http import CleanupStreamingResponse, endpoint, read_json, sse as _sse

IGNORED = {"user", "store", "metadata", "service_tier", "parallel_tool_calls", "modalities"}
COMMON = {"model", "stream", "stream_options", "max_tokens", "temperature", "top_p", "seed", "stop", "n",
          "presence_penalty", "frequency_penalty", "logprobs", "top_logprobs", "logit_bias"} | IGNORED
CHAT_FIELDS = COMMON | {"messages", "max_completion_tokens", "tools", "tool_choice", "response_format",
                        "reasoning_effort", "chat_template_kwargs"}
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")
COMPLETION_FIELDS = COMMON | {"prompt", "echo", "suffix", "best_of"}


def _check_fields(body: Dict[str, Any], known: set) -> None:
    for name in body:
        if name not in known:
            raise bad_request(f"unknown or unsupported parameter {name!r}", name, "unknown_parameter")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise bad_request(f"'stream' must be a boolean, got {stream!r}", "stream")
    so = body.get("stream_options")
    if so is not None:
        if not isinstance(so, dict):
            raise bad_request(f"'stream_options' must be an object, got {type(so).__name__}", "stream_options")
        for key, value in so.items():
            if key not in ("include_usage", "include_obfuscation"):
                raise bad_request(f"unknown stream_options field {key!r}", "stream_options", "unknown_parameter")
            if value is not None and not isinstance(value, bool):
                raise bad_request(f"stream_options.{key} must be a boolean, got {value!r}", "stream_options")


def _think(body: Dict[str, Any]) -> Optional[bool]:
    """The thinking switch a chat request asks for: OpenAI's ``reasoning_effort`` ("none": off, any other effort: on)
    or ``chat_template_kwargs.enable_thinking`` (vLLM's and SGLang's way for Qwen3-style templates); None: the
    template's default. A model without the switch refuses "on" (as OpenAI refuses reasoning_effort there)."""
    think: Optional[bool] = None
    effort = body.get("reasoning_effort")
    if effort is not None:
        if effort not in REASONING_EFFORTS:
            raise bad_request(f"reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}, got {effort!r}",
                              "reasoning_effort", "invalid_value")
        think = effort != "none"
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None:
        if not isinstance(kwargs, dict):
            raise bad_request("chat_template_kwargs must be an object", "chat_template_kwargs")
        unknown = sorted(set(kwargs) - {"enable_thinking"})
        if unknown:
            raise bad_request(f"chat_template_kwargs {unknown[0]!r} is not supported (only enable_thinking)",
                              "chat_template_kwargs", "unsupported_parameter")
        enable = kwargs.get("enable_thinking")
        if enable is not None:
            if not isinstance(enable, bool):
                raise bad_request("chat_template_kwargs.enable_thinking must be a boolean", "chat_template_kwargs")
            if think is not None and think != enable:
                raise bad_request(f"reasoning_effort {effort!r} and chat_template_kwargs.enable_thinking={enable} "
                                  "disagree", "chat_template_kwargs")
            think = enable
    return think


def token_limit(body: Dict[str, Any], name: str) -> Optional[int]:
    """``body[name]``, a request's limit of new tokens (None: unset), checked as a positive integer and by the rest of
    the provider's num_predict rules (it must fit the config's max_new_tokens); a 400 names the field as sent."""
    limit = body.get(name)
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise bad_request(f"{name} must be a positive integer, got {limit!r}", name)
    try:
        check_options({"num_predict": limit})
    except OptionError as exc:
        raise bad_request(str(exc).replace("option 'num_predict'", name), name) from None
    return limit


def _options(body: Dict[str, Any], chat: bool) -> Dict[str, Any]:
    """Ollama-style provider options from OpenAI fields; refuses what cannot be honoured."""
    n = body.get("n")
    if n is not None and n != 1:
        raise bad_request(f"n={n!r} is not supported: one pipeline returns one answer per request; send n "
                          "requests", "n", "unsupported_parameter")
    if body.get("logprobs") or body.get("top_logprobs") is not None:
        raise bad_request("logprobs are not available through the GenAI C API", "logprobs", "unsupported_parameter")
    if body.get("logit_bias"):
        raise bad_request("logit_bias is not available through the GenAI C API", "logit_bias",
                          "unsupported_parameter")
    if body.get("modalities") not in (None, ["text"]):
        raise bad_request("only the text modality is supported", "modalities", "unsupported_parameter")
    opts: Dict[str, Any] = {}
    limit_name = "max_completion_tokens" if chat and body.get("max_completion_tokens") is not None else "max_tokens"
    limit = token_limit(body, limit_name)
    if limit is not None:
        opts["num_predict"] = limit
    for src, dst in (("temperature", "temperature"), ("top_p", "top_p"), ("seed", "seed"), ("stop", "stop"),
                     ("presence_penalty", "presence_penalty"), ("frequency_penalty", "frequency_penalty")):
        if body.get(src) is not None:
            opts[dst] = body[src]
    return opts


def _text_of(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in ("image_url", "input_image", "image"):
                raise bad_request(f"{where}.content[{i}]: an image part cannot be served: {IMAGES_REFUSED}",
                                  "messages", "unsupported_content")
            if kind != "text" or not isinstance(part.get("text"), str):
                raise bad_request(f"{where}.content[{i}]: only text parts are supported, got type {kind!r}",
                                  "messages", "unsupported_content")
            parts.append(part["text"])
        return "".join(parts)
    raise bad_request(f"{where}.content must be a string or a list of text parts", "messages")


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _history_tool_calls(value: Any, where: str) -> List[Dict[str, Any]]:
    """An assistant message's ``tool_calls`` (OpenAI's shape: a list of ``{"id", "type": "function", "function":
    {"name", "arguments": JSON text}}``) checked, as the provider's message dicts; 400 naming the field."""
    if not isinstance(value, list):
        raise bad_request(f"{where} must be a list of tool call objects, got {type(value).__name__}", "messages")
    calls = []
    for j, c in enumerate(value):
        here = f"{where}[{j}]"
        if not isinstance(c, dict):
            raise bad_request(f"{here} must be a tool call object, got {type(c).__name__}", "messages")
        if c.get("type", "function") != "function":
            raise bad_request(f"{here}.type must be 'function', got {c.get('type')!r}", "messages")
        fn = c.get("function")
        if not isinstance(fn, dict):
            raise bad_request(f"{here}.function must be an object with a string 'name', got {type(fn).__name__}",
                              "messages")
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise bad_request(f"{here}.function.name must be a non-empty string", "messages")
        args = fn.get("arguments")
        if args is not None and not isinstance(args, (str, dict)):
            raise bad_request(f"{here}.function.arguments must be a JSON string, got {type(args).__name__}",
                              "messages")
        if c.get("id") is not None and not isinstance(c["id"], str):
            raise bad_request(f"{here}.id must be a string", "messages")
        call: Dict[str, Any] = {"type": "function", "function": {"name": fn["name"], "arguments": _arguments(args)}}
        if c.get("id"):
            call["id"] = c["id"]
        calls.append(call)
    return calls


def convert_messages(messages: Any) -> List[Dict[str, Any]]:
    """OpenAI chat messages → the provider's message dicts (tool-call arguments as objects, as templates use)."""
    if not isinstance(messages, list) or not messages:
        raise bad_request("'messages' must be a non-empty list of message objects", "messages")
    out: List[Dict[str, Any]] = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise bad_request(f"{where} must be an object with a string 'role'", "messages")
        role = "system" if m["role"] == "developer" else m["role"]
        if role not in ("system", "user", "assistant", "tool"):
            raise bad_request(f"{where}: unknown role {m['role']!r}", "messages")
        msg: Dict[str, Any] = {"role": role, "content": _text_of(m.get("content"), where)}
        if m.get("tool_calls") is not None:
            calls = _history_tool_calls(m["tool_calls"], f"{where}.tool_calls")
            if role == "assistant" and calls:
                msg["tool_calls"] = calls
        if role == "tool" and m.get("tool_call_id"):
            msg["tool_call_id"] = m["tool_call_id"]
        if m.get("name"):
            msg["name"] = m["name"]
        out.append(msg)
    return out


def _tools(body: Dict[str, Any]) -> Optional[List[Dict[str, Any]]]:
    tools = body.get("tools")
    choice = body.get("tool_choice")
    if choice not in (None, "auto", "none"):
        raise bad_request(f"tool_choice={choice!r} is not supported (only 'auto' and 'none'): the model cannot be "
                          "forced to call a tool", "tool_choice", "unsupported_parameter")
    if not tools or choice == "none":
        return None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise bad_request("'tools' must be a list of tool objects", "tools")
    return tools


def openai_tool_calls(calls: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for c in calls:
        fn = c.get("function", {})
        args = fn.get("arguments")
        out.append({"id": "call_" + uuid.uuid4().hex[:24], "type": "function",
                    "function": {"name": fn.get("name"),
                                 "arguments": args if isinstance(args, str) else json.dumps(args)}})
    return out


class OpenAIRoutes:
    def __init__(self, state: Any) -> None:
        self.state = state

    def routes(self) -> List[Route]:
        return [Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/completions", self.completions, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
                Route("/v1/models/{model:path}", self.model, methods=["GET"])]

    async def _start(self, body: Dict[str, Any], ask: Ask) -> Generation:
        return await Generation.start(self.state.registry, body.get("model"), ask, self.state.config.request_timeout)

    @endpoint(ollama=False)
    async def chat(self, request: Request) -> Response:
        body = await read_json(request, self.state.config.max_body_bytes)
        _check_fields(body, CHAT_FIELDS)
        fmt = body.get("response_format")
        if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
            kind = fmt.get("type") if isinstance(fmt, dict) else fmt
            raise bad_request(f"response_format {kind!r} is not supported (only 'text'): constrained output is not "
                              "available through the GenAI C API", "response_format", "unsupported_parameter")
        ask = Ask(convert_messages(body.get("messages")), tools=_tools(body), options=_options(body, chat=True),
                  think=_think(body))
        gen = await self._start(body, ask)
        return await self._answer(request, body, gen, chat=True, tools=bool(ask.tools))

    @endpoint(ollama=False)
    async def completions(self, request: Request) -> Response:
        body = await read_json(request, self.state.config.max_body_bytes)
        _check_fields(body, COMPLETION_FIELDS)
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str):
            raise bad_request("'prompt' must be a string (or a list of one string); token-id prompts and batches "
                              "are not supported", "prompt")
        for name, ok in (("echo", not body.get("echo")), ("suffix", not body.get("suffix")),
                         ("best_of", body.get("best_of") in (None, 1))):
            if not ok:
                raise bad_request(f"{name} is not supported", name, "unsupported_parameter")
        gen = await self._start(body, Ask(prompt, options=_options(body, chat=False)))
        return await self._answer(request, body, gen, chat=False, tools=False)

    async def _answer(self, request: Request, body: Dict[str, Any], gen: Generation, chat: bool,
                      tools: bool) -> Response:
        cid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        created = int(time.time())
        model = gen.slot.name
        if not body.get("stream"):
            res = await gen.answer(request.receive)
            if res is None:
                return Response(status_code=499)
            usage = dict(res.usage)
            if chat:
                message: Dict[str, Any] = {"role": "assistant", "content": res.text}
                if res.message.get("thinking"):  # (DeepSeek's and vLLM's field for a thinking model's reasoning)
                    message["reasoning_content"] = res.message["thinking"]
                if res.tool_calls:
                    message["tool_calls"] = openai_tool_calls(res.tool_calls)
                    message["content"] = res.text or None
                choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": res.finish_reason}
            else:
                choice = {"index": 0, "text": res.text, "logprobs": None, "finish_reason": res.finish_reason}
            return JSONResponse({"id": cid, "object": "chat.completion" if chat else "text_completion",
                                 "created": created, "model": model, "choices": [choice], "usage": usage})
        so = body.get("stream_options") or {}
        include_usage = isinstance(so, dict) and bool(so.get("include_usage"))
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(delta: Optional[Dict[str, Any]] = None, text: Optional[str] = None,
                  finish: Optional[str] = None) -> Dict[str, Any]:
            c: Dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": finish}
            if chat:
                c["delta"] = delta or {}
            else:
                c["text"] = text or ""
            return {"id": cid, "object": obj, "created": created, "model": model, "choices": [c]}

        async def events():
            try:
                if chat:
                    yield _sse(chunk({"role": "assistant", "content": ""}))
                while True:
                    try:
                        pieces = await gen.next_pieces()
                    except Exception as exc:
                        from .errors import openai_body, to_http

                        yield _sse(openai_body(to_http(exc)))
                        break
                    if pieces is None:
                        res = gen.result
                        reason = res.finish_reason if res else "stop"
                        if tools and res is not None:  # buffered: the text may have been a tool call
                            delta: Dict[str, Any] = {}
                            if chat and res.message.get("thinking"):
                                delta["reasoning_content"] = res.message["thinking"]
                            if res.text:
                                delta["content"] = res.text
                            if res.tool_calls:
                                delta["tool_calls"] = [dict(c, index=i) for i, c in
                                                       enumerate(openai_tool_calls(res.tool_calls))]
                            yield _sse(chunk(delta))
                        yield _sse(chunk(finish=reason))
                        if include_usage and res is not None:
                            yield _sse({"id": cid, "object": obj, "created": created, "model": model,
                                        "choices": [], "usage": dict(res.usage)})
                        break
                    for kind, piece in ([] if tools else pieces):
                        if kind == CONTENT:
                            yield _sse(chunk({"content": piece}, text=piece))
                        elif chat:  # (a completion's text is the answer only, as when it is not streamed)
                            yield _sse(chunk({"reasoning_content": piece}))
                yield b"data: [DONE]\n\n"
            finally:
                await gen.close()

        return CleanupStreamingResponse(events(), gen.close, media_type="text/event-stream",
                                        headers={"Cache-Control": "no-cache"})

    @endpoint(ollama=False)
    async def models(self, request: Request) -> Response:
        registry = self.state.registry
        # (Whisper models are listed, as OpenAI lists its speech models: /v1/audio/transcriptions takes them)
        data = [self._model_obj(e) for e in registry.entries()] + \
            [_remote_model_obj(n) for n in registry.remote_names()]
        return JSONResponse({"object": "list", "data": data})

    @endpoint(ollama=False)
    async def model(self, request: Request) -> Response:
        name, _path = self.state.registry.resolve(request.path_params["model"])
        if self.state.registry.is_remote(name):
            return JSONResponse(_remote_model_obj(name))
        for e in self.state.registry.entries():
            if e.name == name:
                return JSONResponse(self._model_obj(e))
        raise HTTPError(404, f"no model named {name!r}", "model", "model_not_found")

    @staticmethod
    def _model_obj(entry: Any) -> Dict[str, Any]:
        try:
            created = int(entry.path.stat().st_mtime)
        except OSError:
            created = 0
        return {"id": entry.name, "object": "model", "created": created, "owned_by": "ovgenai_c"}


def _remote_model_obj(name: str) -> Dict[str, Any]:
    """A remote model (another endpoint answers it) in the model list."""
    return {"id": name, "object": "model", "created": 0, "owned_by": "remote"}
