"""Ollama-compatible routes: POST /api/chat, POST /api/generate (NDJSON streaming unless ``"stream": false``),
GET /api/tags, POST /api/show, GET /api/ps, GET /api/version.

Options use Ollama's names (checked by the provider: unknown or unsupported → 400). ``format`` (JSON/schema
output), ``images``, ``template``, ``suffix`` and ``context`` are refused with 400; ``keep_alive`` is
accepted and ignored (models stay loaded up to --max-loaded-models).
"""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import __version__
from ..provider import IMAGES_REFUSED, ChatResult, model_digest
from ..provider.provider import perf_dict
from ..provider.thinking import CONTENT
from .errors import bad_request, ollama_body, to_http
from .generation import Ask, Generation
from .http import CleanupStreamingResponse, endpoint, read_json

CHAT_FIELDS = {"model", "messages", "tools", "format", "options", "stream", "keep_alive", "think"}
GENERATE_FIELDS = {"model", "prompt", "suffix", "system", "template", "context", "stream", "raw", "format", "images",
                   "options", "keep_alive", "think"}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")


def _check(body: Dict[str, Any], known: set) -> None:
    for name in body:
        if name not in known:
            raise bad_request(f"unknown field {name!r}")
    if body.get("format"):
        raise bad_request(f"format {body['format']!r} is not supported: constrained (JSON) output is not available "
                          "through the GenAI C API")
    options = body.get("options")
    if options is not None and not isinstance(options, dict):
        raise bad_request("'options' must be an object")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise bad_request(f"'stream' must be true or false, got {stream!r}")
    think = body.get("think")
    if think is not None and not isinstance(think, bool):
        raise bad_request("'think' must be true or false (think levels are not supported)")


def _history_tool_calls(value: Any, where: str) -> List[Dict[str, Any]]:
    """A message's ``tool_calls`` (Ollama's shape: a list of ``{"function": {"name", "arguments": {...}}}``) checked,
    as the provider's message dicts; 400 naming the field."""
    if not isinstance(value, list):
        raise bad_request(f"{where} must be a list of tool call objects, got {type(value).__name__}")
    calls = []
    for j, c in enumerate(value):
        here = f"{where}[{j}]"
        if not isinstance(c, dict):
            raise bad_request(f"{here} must be a tool call object, got {type(c).__name__}")
        fn = c.get("function")
        if not isinstance(fn, dict):
            raise bad_request(f"{here}.function must be an object with a string 'name', got {type(fn).__name__}")
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise bad_request(f"{here}.function.name must be a non-empty string")
        if fn.get("arguments") is not None and not isinstance(fn["arguments"], dict):
            raise bad_request(f"{here}.function.arguments must be an object, got {type(fn['arguments']).__name__}")
        calls.append({"type": "function", "function": dict(fn)})
    return calls


def _messages(messages: Any) -> List[Dict[str, Any]]:
    if not isinstance(messages, list):
        raise bad_request("'messages' must be a list of message objects")
    out: List[Dict[str, Any]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise bad_request(f"messages[{i}] must be an object with a string 'role'")
        if m.get("images"):
            raise bad_request(f"messages[{i}]: images are not supported: {IMAGES_REFUSED}")
        content = m.get("content") or ""
        if not isinstance(content, str):
            raise bad_request(f"messages[{i}].content must be a string")
        msg: Dict[str, Any] = {"role": m["role"], "content": content}
        if m.get("tool_calls") is not None:
            calls = _history_tool_calls(m["tool_calls"], f"messages[{i}].tool_calls")
            if calls:
                msg["tool_calls"] = calls
        if m.get("tool_name"):
            msg["name"] = m["tool_name"]
        out.append(msg)
    return out


def _ollama_tool_calls(calls: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for c in calls:
        fn = c.get("function", {})
        args = fn.get("arguments")
        out.append({"function": {"name": fn.get("name"), "arguments": args if isinstance(args, dict) else {}}})
    return out


def _counts(res: Optional[ChatResult], gen: Generation) -> Dict[str, Any]:
    """Ollama's final-chunk counters; durations in nanoseconds."""
    total_ns = int((time.monotonic() - gen.started) * 1e9)
    out: Dict[str, Any] = {"total_duration": total_ns, "load_duration": int(gen.load_s * 1e9)}
    if res is None:
        return out
    ttft_ms = gen_ms = None
    try:
        ttft_ms = res.perf.get_ttft().mean
        gen_ms = res.perf.get_generate_duration().mean
    except Exception:
        pass
    out["prompt_eval_count"] = res.usage.get("prompt_tokens", 0)
    out["prompt_eval_duration"] = int((ttft_ms or 0) * 1e6)
    out["eval_count"] = res.usage.get("completion_tokens", 0)
    out["eval_duration"] = int(max((gen_ms or 0) - (ttft_ms or 0), 0) * 1e6)
    return out


def _done_reason(res: Optional[ChatResult]) -> str:
    if res is None:
        return "stop"
    return "length" if res.finish_reason == "length" else "stop"


def _ndjson(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


class OllamaRoutes:
    def __init__(self, state: Any) -> None:
        self.state = state

    def routes(self) -> List[Route]:
        return [Route("/api/chat", self.chat, methods=["POST"]),
                Route("/api/generate", self.generate, methods=["POST"]),
                Route("/api/tags", self.tags, methods=["GET"]),
                Route("/api/show", self.show, methods=["POST"]),
                Route("/api/ps", self.ps, methods=["GET"]),
                Route("/api/version", self.version, methods=["GET"])]

    @endpoint(ollama=True)
    async def chat(self, request: Request) -> Response:
        body = await read_json(request, self.state.config.max_body_bytes)
        _check(body, CHAT_FIELDS)
        messages = _messages(body.get("messages") or [])
        if not messages:  # Ollama: an empty chat loads the model
            slot = await self.state.registry.slot(body.get("model"), "chat")
            return JSONResponse({"model": slot.name, "created_at": _now(),
                                 "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "load"})
        tools = body.get("tools") or None
        if tools is not None and not isinstance(tools, list):
            raise bad_request("'tools' must be a list of tool objects")
        ask = Ask(messages, tools=tools, think=body.get("think"), options=dict(body.get("options") or {}))
        gen = await Generation.start(self.state.registry, body.get("model"), ask, self.state.config.request_timeout)
        return await self._answer(request, body, gen, chat=True, tools=bool(tools))

    @endpoint(ollama=True)
    async def generate(self, request: Request) -> Response:
        body = await read_json(request, self.state.config.max_body_bytes)
        _check(body, GENERATE_FIELDS)
        if body.get("images"):
            raise bad_request(f"'images' is not supported: {IMAGES_REFUSED}")
        for name in ("suffix", "template", "context"):
            if body.get(name):
                raise bad_request(f"{name!r} is not supported by this server")
        raw = body.get("raw", False)
        if not isinstance(raw, bool):
            raise bad_request("'raw' must be a boolean")
        if raw and body.get("system"):
            raise bad_request("'system' cannot be used with 'raw' (no template is applied)")
        prompt = body.get("prompt") or ""
        system = body.get("system") or None
        if not isinstance(prompt, str) or (system is not None and not isinstance(system, str)):
            raise bad_request("'prompt' and 'system' must be strings")
        if not prompt:  # Ollama: an empty prompt loads the model
            slot = await self.state.registry.slot(body.get("model"), "chat")
            return JSONResponse({"model": slot.name, "created_at": _now(), "response": "", "done": True,
                                 "done_reason": "load"})
        ask = Ask(prompt, system=system, think=body.get("think"), options=dict(body.get("options") or {}), raw=raw)
        gen = await Generation.start(self.state.registry, body.get("model"), ask, self.state.config.request_timeout)
        return await self._answer(request, body, gen, chat=False, tools=False)

    async def _answer(self, request: Request, body: Dict[str, Any], gen: Generation, chat: bool,
                      tools: bool) -> Response:
        model = gen.slot.name

        def piece_obj(text: str, calls: Optional[List[Dict[str, Any]]] = None,
                      thinking: Optional[str] = None) -> Dict[str, Any]:
            if chat:
                msg: Dict[str, Any] = {"role": "assistant", "content": text}
                if calls:
                    msg["tool_calls"] = _ollama_tool_calls(calls)
                if thinking:
                    msg["thinking"] = thinking
                return {"model": model, "created_at": _now(), "message": msg, "done": False}
            obj = {"model": model, "created_at": _now(), "response": text, "done": False}
            if thinking:
                obj["thinking"] = thinking
            return obj

        def final(res: Optional[ChatResult], whole: bool) -> Dict[str, Any]:
            if whole and res is not None:
                obj = piece_obj(res.text, res.tool_calls, res.message.get("thinking"))
            else:
                obj = piece_obj("")
            obj.update(done=True, done_reason=_done_reason(res), **_counts(res, gen))
            if res is not None:  # what `ovgenai-c generate --json` prints (Ollama clients ignore extra fields)
                obj["ovgenai_c"] = {"finish_reason": res.finish_reason, "usage": res.usage,
                                    "perf": perf_dict(res.perf) if res.perf is not None else None}
            return obj

        if body.get("stream") is False:
            res = await gen.answer(request.receive)
            if res is None:
                return Response(status_code=499)
            return JSONResponse(final(res, whole=True))

        async def lines():
            try:
                while True:
                    try:
                        pieces = await gen.next_pieces()
                    except Exception as exc:
                        yield _ndjson(ollama_body(to_http(exc)))
                        break
                    if pieces is None:
                        res = gen.result
                        if tools and res is not None:  # buffered: the text may have been a tool call
                            yield _ndjson(piece_obj(res.text, res.tool_calls, res.message.get("thinking")))
                        yield _ndjson(final(res, whole=False))
                        break
                    for kind, piece in ([] if tools else pieces):  # (Ollama streams the reasoning as "thinking")
                        yield _ndjson(piece_obj(piece) if kind == CONTENT else piece_obj("", thinking=piece))
            finally:
                await gen.close()

        return CleanupStreamingResponse(lines(), gen.close, media_type="application/x-ndjson")

    # --- models --------------------------------------------------------------------------------------------
    @staticmethod
    def _details(entry: Any) -> Dict[str, Any]:
        return {"parent_model": "", "format": "openvino-ir" if entry.format == "ir" else entry.format,
                "family": "", "families": None, "parameter_size": "", "quantization_level": ""}

    def _tag(self, entry: Any) -> Dict[str, Any]:
        try:
            modified = _iso(entry.path.stat().st_mtime)
        except OSError:
            modified = _now()
        return {"name": entry.name, "model": entry.name, "modified_at": modified, "size": entry.size,
                "digest": model_digest(entry.path), "details": self._details(entry)}

    @endpoint(ollama=True)
    async def tags(self, request: Request) -> Response:
        entries = await anyio.to_thread.run_sync(self.state.registry.chat_entries)  # what Ollama's routes can use
        remote = [self._remote_tag(n) for n in self.state.registry.remote_names()]
        return JSONResponse({"models": [self._tag(e) for e in entries] + remote})

    @staticmethod
    def _remote_tag(name: str) -> Dict[str, Any]:
        """A remote model (another endpoint answers it) in the model list."""
        return {"name": name, "model": name, "modified_at": _now(), "size": 0, "digest": "",
                "details": {"parent_model": "", "format": "remote", "family": "", "families": None,
                            "parameter_size": "", "quantization_level": ""}}

    @endpoint(ollama=True)
    async def show(self, request: Request) -> Response:
        body = await read_json(request, self.state.config.max_body_bytes)
        name, path = self.state.registry.resolve(body.get("model", body.get("name")))
        slot = self.state.registry.get_loaded(name)
        if slot is None and self.state.registry.is_remote(name):
            slot = await self.state.registry.slot(name)  # the remote provider: one GET /models, no pipeline
        if slot is not None:
            provider = slot.providers[0]
        else:  # a provider object reads the model's files and profile; it loads no pipeline
            provider = await anyio.to_thread.run_sync(self.state.registry.factory, path, 0)
        caps = provider.capabilities
        entry = next((e for e in self.state.registry.entries() if e.name == name), None)
        completion = caps.chat or caps.prompt  # not a Whisper model (speech to text: no Ollama route takes it)
        capabilities = (["completion"] if completion else []) + (["tools"] if caps.tools else []) + (["thinking"] if caps.think else []) + \
            (["vision"] if getattr(caps, "vision", False) else [])
        model_info = getattr(provider, "info", None)  # None for a remote model
        info: Dict[str, Any] = {"general.format": model_info.format if model_info else "remote"}
        if caps.context_length:
            info["general.context_length"] = caps.context_length
        defaults = "\n".join(f"{k} {json.dumps(v)}" for k, v in provider.default_options.items())
        return JSONResponse({"modelfile": "", "parameters": defaults, "template": (model_info.chat_template if model_info else "") or "",
                             "details": self._details(entry) if entry else
                             self._remote_tag(name)["details"] if slot is not None and slot.remote else {},
                             "model_info": info,
                             "capabilities": capabilities, "modified_at": self._tag(entry)["modified_at"]
                             if entry else _now()})

    @endpoint(ollama=True)
    async def ps(self, request: Request) -> Response:
        entries = {e.name: e for e in self.state.registry.entries()}
        out = []
        for slot in self.state.registry.loaded():
            e = entries.get(slot.name)
            item = self._tag(e) if e else {"name": slot.name, "model": slot.name}
            item.update(expires_at="9999-12-31T23:59:59Z", size_vram=0,
                        context_length=getattr(slot.providers[0].capabilities, "context_length", None),
                        ovgenai_c={"pipelines": len(slot.distinct_providers()), "batched": slot.batched,
                                   "concurrent": len(slot.providers), "running": slot.running,
                                   "waiting": slot.waiting, "stats": vars(slot.stats), "sessions": slot.sessions()})
            out.append(item)
        return JSONResponse({"models": out})

    @endpoint(ollama=True)
    async def version(self, request: Request) -> Response:
        return JSONResponse({"version": __version__})
