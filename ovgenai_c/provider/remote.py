"""A remote backend for the provider facade: any OpenAI-compatible endpoint (OpenVINO Model Server's ``/v3``,
``ovgenai-c serve``'s ``/v1``, ...) behind the same interface as a local model — ``prompt``, ``prompt_result``,
``chat``, ``stream``, ``astream``, ``capabilities`` — with the provider's option names and error types.

::

    from ovgenai_c.provider import open_provider
    p = open_provider("openai+http://127.0.0.1:8000/v3#SmolLM2-135M-Instruct", api_key="...")   # or a local path
    p.prompt("What is the capital of France?", num_predict=32, temperature=0)

Spec: ``openai+http[s]://HOST[:PORT]/PATH#MODEL`` (``#MODEL`` may be left out when the endpoint lists one model).
Standard library only (``http.client``); the key comes from ``api_key=`` or ``$OPENAI_API_KEY``. Errors: 400 →
:class:`OptionError` (naming the option) / :class:`CapabilityNotSupportedError` / ``InvalidParameterError``,
401/403 → :class:`RemoteAuthError`, 404 → :class:`CatalogError`, 429/503 → ``RequestBusyError``, 504 or the
client's ``timeout`` → ``GenerationTimeoutError``, unreachable → :class:`RemoteUnavailableError`, anything else →
:class:`RemoteError`. Closing a stream closes its connection, which cancels the generation on servers that
watch for it (``ovgenai-c serve`` does, within a token).
"""
from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import time
from collections import deque
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional, Tuple
from urllib.parse import urlsplit

from .. import errors
from .errors import CapabilityNotSupportedError, CatalogError, OptionError, RemoteAuthError, RemoteError, \
    RemoteUnavailableError, closest
from .options import check_options
from .provider import Capabilities, ChatResult, Messages
from .thinking import CONTENT, THINKING, Piece

SCHEME_PREFIX = "openai+"
API_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_TIMEOUT = 600.0
# provider option (Ollama name) -> request field; the last three are common extensions (vLLM, OpenVINO Model
# Server), not OpenAI's own: an endpoint without them refuses them (→ OptionError naming the option)
OPTION_FIELDS = {"num_predict": "max_tokens", "temperature": "temperature", "top_p": "top_p", "seed": "seed",
                 "stop": "stop", "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
                 "top_k": "top_k", "min_p": "min_p", "repeat_penalty": "repetition_penalty"}
_FIELD_OPTIONS = {v: k for k, v in OPTION_FIELDS.items()}
_FIELD_OPTIONS["max_completion_tokens"] = "num_predict"
# the HTTP status an error event inside a stream stands for, by its code / type (OpenAI's shape)
_STREAM_ERROR_STATUS = {"timeout": 504, "timeout_error": 504, "queue_full": 429, "rate_limit_error": 429,
                        "invalid_request_error": 400, "invalid_request": 400, "invalid_option": 400,
                        "not_supported": 400, "model_not_found": 404}
CONTEXT_FIELDS = ("context_length", "max_model_len", "context_window", "max_context_length")


def is_remote_spec(spec: Any) -> bool:
    """True for ``openai+http://...`` / ``openai+https://...`` strings."""
    return isinstance(spec, str) and spec.startswith((SCHEME_PREFIX + "http://", SCHEME_PREFIX + "https://"))


def parse_spec(spec: str) -> Tuple[str, Optional[str]]:
    """``openai+http://host:port/v1#model`` → (``http://host:port/v1``, ``"model"`` or None)."""
    if not is_remote_spec(spec):
        raise errors.InvalidParameterError(
            f"a remote model spec looks like 'openai+http://HOST:PORT/v1#MODEL', got {spec!r}")
    url, _, model = spec[len(SCHEME_PREFIX):].partition("#")
    parts = urlsplit(url)
    if not parts.hostname:
        raise errors.InvalidParameterError(f"the remote model spec {spec!r} names no host")
    return url.rstrip("/"), (model or None)


class _Conn:
    """One HTTP request to the endpoint (a connection each: a closed stream is a closed socket)."""

    def __init__(self, base: str, timeout: float) -> None:
        parts = urlsplit(base)
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self.conn = cls(parts.hostname, parts.port, timeout=timeout)
        self.prefix = parts.path.rstrip("/")
        self.netloc = parts.netloc

    def request(self, method: str, path: str, body: Optional[Dict[str, Any]], headers: Dict[str, str]) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        hdrs = dict(headers, **({"Content-Type": "application/json"} if data is not None else {}))
        try:
            self.conn.request(method, self.prefix + path, body=data, headers=hdrs)
            return self.conn.getresponse()
        except socket.timeout:
            self.close()
            raise
        except (ConnectionError, socket.gaierror, OSError) as exc:
            self.close()
            raise RemoteUnavailableError(f"cannot reach {self.netloc}: {exc}") from None

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass


def _error_from(status: int, raw: bytes, where: str) -> errors.GenAIError:
    """The provider error for an endpoint's error answer (OpenAI's shape, Ollama's, or plain text)."""
    message, param, code = raw.decode("utf-8", "replace").strip()[:2000], None, None
    try:
        body = json.loads(raw)
        err = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(err, dict):
            message = str(err.get("message") or message)
            param, code = err.get("param"), err.get("code")
        elif isinstance(err, str):
            message = err
    except ValueError:
        pass
    text = f"{where}: HTTP {status}: {message}"
    if status == 400:
        if param in _FIELD_OPTIONS:
            return OptionError(text, _FIELD_OPTIONS[param])
        if code == "not_supported" or param in ("tools", "think"):
            return CapabilityNotSupportedError(text, param)
        return errors.InvalidParameterError(text)
    if status in (401, 403):
        return RemoteAuthError(text, status)
    if status == 404:
        return CatalogError(text)
    if status == 413:
        return errors.InvalidParameterError(text)
    if status in (429, 503):
        return errors.RequestBusyError(text)
    if status == 504:
        return errors.GenerationTimeoutError(text)
    return RemoteError(text, status)


def sse_data(resp: Any) -> Iterator[str]:
    """The ``data:`` payloads of a server-sent-event stream (a binary file-like object read line by line), one per
    event as it arrives, multi-line data joined by newlines; comments and other fields are skipped."""
    data: List[str] = []
    while True:
        raw = resp.readline()
        if not raw:
            break
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def _reasoning(message: Dict[str, Any]) -> Optional[str]:
    """A message's (or delta's) reasoning: ``reasoning_content`` (``ovgenai-c serve``, DeepSeek, vLLM) or
    ``reasoning`` (vLLM's newer name, OpenRouter); None when it has none."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str):
            return value
    return None


def _tool_calls(calls: Any) -> List[Dict[str, Any]]:
    """OpenAI tool calls (arguments as a JSON string) in the provider's shape (arguments as a dict)."""
    out = []
    for c in calls or []:
        fn = dict((c or {}).get("function") or {})
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                pass
        out.append({"type": "function", "function": {"name": fn.get("name"), "arguments": args}})
    return out


class RemoteProvider:
    """A model behind an OpenAI-compatible endpoint, with :class:`~ovgenai_c.provider.Provider`'s interface.

    ``base_url``: the API root (``http://host:port/v1``; OpenVINO Model Server: ``.../v3``). ``model``: its id
    (None: the endpoint's only model). ``api_key``: sent as ``Authorization: Bearer`` (default
    ``$OPENAI_API_KEY``). ``timeout``: seconds per request (each call's ``timeout=`` overrides it). ``options``:
    default options, Ollama names as for a local model. Capabilities come from ``GET /models``."""

    def __init__(self, base_url: str, model: Optional[str] = None, *, api_key: Optional[str] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT, options: Optional[Dict[str, Any]] = None) -> None:
        if not isinstance(base_url, str) or urlsplit(base_url).scheme not in ("http", "https"):
            raise errors.InvalidParameterError(f"base_url must be an http(s) URL, got {base_url!r}")
        if timeout is not None and not timeout > 0:
            raise errors.InvalidParameterError(f"timeout must be > 0 seconds, got {timeout!r}")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key if api_key is not None else (os.environ.get(API_KEY_ENV) or None)
        self.timeout = timeout
        self.default_options = check_options(options or {})
        self.device = None
        self.library_kind = "remote"
        self.model_object = self._model_object(model)
        self.model = str(self.model_object["id"])
        self.capabilities = self._capabilities(self.model_object)

    @classmethod
    def from_spec(cls, spec: str, **kwargs: Any) -> "RemoteProvider":
        """A provider for ``openai+http://host:port/v1#model``."""
        url, model = parse_spec(spec)
        return cls(url, model, **kwargs)

    def __repr__(self) -> str:
        return f"<RemoteProvider {self.model!r} at {self.base_url}>"

    # --- plumbing ------------------------------------------------------------------------------------
    def _headers(self) -> Dict[str, str]:
        h = {"Accept": "application/json"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]], timeout: Optional[float]) -> Any:
        limit = timeout if timeout is not None else self.timeout
        conn = _Conn(self.base_url, limit if limit is not None else DEFAULT_TIMEOUT)
        try:
            resp = conn.request(method, path, body, self._headers())
        except socket.timeout:
            raise errors.GenerationTimeoutError(
                f"{self.base_url}{path}: no answer within the timeout of {limit:g} s") from None
        if resp.status != 200:
            raw = resp.read()
            conn.close()
            raise _error_from(resp.status, raw, f"{method} {self.base_url}{path}")
        return conn, resp

    def _json(self, method: str, path: str, body: Optional[Dict[str, Any]], timeout: Optional[float]) -> Any:
        conn, resp = self._call(method, path, body, timeout)
        try:
            raw = resp.read()
        except socket.timeout:
            raise errors.GenerationTimeoutError(f"{self.base_url}{path}: the answer did not finish within the "
                                                 "timeout") from None
        finally:
            conn.close()
        try:
            return json.loads(raw)
        except ValueError:
            raise RemoteError(f"{self.base_url}{path}: the answer is not JSON: {raw[:200]!r}", 200) from None

    def _model_object(self, model: Optional[str]) -> Dict[str, Any]:
        listing = self._json("GET", "/models", None, None)
        items = [m for m in (listing.get("data") or []) if isinstance(m, dict) and m.get("id")]
        ids = [str(m["id"]) for m in items]
        if model is None:
            if len(items) == 1:
                return items[0]
            raise errors.InvalidParameterError(
                f"{self.base_url} serves {len(items)} models ({', '.join(ids) or 'none'}); name one: "
                f"'openai+{self.base_url}#MODEL'")
        for m in items:
            if m["id"] == model:
                return m
        raise CatalogError(f"{self.base_url} does not serve a model named {model!r}{closest(model, ids)}; it "
                           f"serves: {', '.join(ids) or 'none'}")

    @staticmethod
    def _capabilities(obj: Dict[str, Any]) -> Capabilities:
        ctx = next((obj[k] for k in CONTEXT_FIELDS if isinstance(obj.get(k), int) and obj[k] > 0), None)
        return Capabilities(chat=True, prompt=True, stream=True, embed=False, think=False, tools=True,
                            context_length=ctx, max_output_tokens=None, tool_call_format="openai")

    def _body(self, options: Dict[str, Any]) -> Dict[str, Any]:
        merged = {**self.default_options, **check_options(options)}
        body: Dict[str, Any] = {"model": self.model}
        for name, value in merged.items():
            if value is None:
                continue
            if name == "num_predict" and value in (-1, -2):
                continue  # Ollama's "no limit": the endpoint's own cap
            if name not in OPTION_FIELDS:
                raise OptionError(f"option {name!r} has no OpenAI-API counterpart", name)
            body[OPTION_FIELDS[name]] = value
        return body

    @staticmethod
    def _messages(messages: Messages, system: Optional[str] = None) -> List[Dict[str, Any]]:
        if isinstance(messages, str):
            msgs: List[Dict[str, Any]] = [{"role": "user", "content": messages}]
        elif hasattr(messages, "get_messages"):
            msgs = list(messages.get_messages())  # a ChatHistory
        elif isinstance(messages, list):
            msgs = list(messages)
        else:
            raise errors.InvalidParameterError(
                f"messages must be a list of {{'role', 'content'}} dicts, not {type(messages).__name__}")
        if not msgs:
            raise errors.InvalidParameterError("messages must not be empty")
        return ([{"role": "system", "content": system}] if system is not None else []) + msgs

    @staticmethod
    def _no_think(think: Optional[bool]) -> None:
        if think is not None:
            raise CapabilityNotSupportedError("the OpenAI API has no thinking switch (capabilities.think is False "
                                              "for a remote model)", "think")

    @staticmethod
    def _result(choice: Dict[str, Any], usage: Optional[Dict[str, Any]], text: Optional[str] = None) -> ChatResult:
        msg = choice.get("message") or {}
        content = text if text is not None else (msg.get("content") if "message" in choice else choice.get("text"))
        message: Dict[str, Any] = {"role": "assistant", "content": content or ""}
        thinking = _reasoning(msg)
        if thinking is not None:
            message["thinking"] = thinking
        calls = _tool_calls(msg.get("tool_calls"))
        if calls:
            message["tool_calls"] = calls
        u = {k: int((usage or {}).get(k) or 0) for k in ("prompt_tokens", "completion_tokens")}
        u["total_tokens"] = u["prompt_tokens"] + u["completion_tokens"]
        return ChatResult(message=message, usage=u, finish_reason=str(choice.get("finish_reason") or "stop"))

    # --- the provider interface --------------------------------------------------------------------
    def load(self) -> float:
        """Nothing to load here (the endpoint holds the model); 0.0."""
        return 0.0

    def warm_up(self) -> None:
        """A 2-token greedy answer, as :meth:`Provider.warm_up` does."""
        self.prompt_result("Hi", num_predict=2, temperature=0)

    def prompt(self, text: str, system: Optional[str] = None, *, think: Optional[bool] = None,
               timeout: Optional[float] = None, **options: Any) -> str:
        """One answer to ``text`` (``/completions``: the endpoint applies its chat template, as GenAI does)."""
        return self.prompt_result(text, system=system, think=think, timeout=timeout, **options).text

    def prompt_result(self, text: str, system: Optional[str] = None, *, think: Optional[bool] = None,
                      timeout: Optional[float] = None, **options: Any) -> ChatResult:
        """Like :meth:`prompt`, with usage and finish reason (``system`` given: a chat with that system message)."""
        self._no_think(think)
        if not isinstance(text, str):
            raise errors.InvalidParameterError(f"the prompt must be a str, not {type(text).__name__}")
        if system is not None:
            return self.chat([{"role": "user", "content": text}], system=system, timeout=timeout, **options)
        body = dict(self._body(options), prompt=text)
        out = self._json("POST", "/completions", body, timeout)
        return self._result((out.get("choices") or [{}])[0], out.get("usage"))

    def chat(self, messages: Messages, tools: Optional[List[Any]] = None, *, think: Optional[bool] = None,
             system: Optional[str] = None, timeout: Optional[float] = None, **options: Any) -> ChatResult:
        """Answer a conversation (``/chat/completions``); tool calls come back in ``message["tool_calls"]``."""
        self._no_think(think)
        body = dict(self._body(options), messages=self._messages(messages, system))
        if tools:
            body["tools"] = list(tools)
        out = self._json("POST", "/chat/completions", body, timeout)
        return self._result((out.get("choices") or [{}])[0], out.get("usage"))

    def stream(self, messages: Messages, tools: Optional[List[Any]] = None, *, system: Optional[str] = None,
               think: Optional[bool] = None, timeout: Optional[float] = None, **options: Any) -> "RemoteChatStream":
        """Iterate over the answer's text chunks (server-sent events); closing the stream closes the connection."""
        self._no_think(think)
        body = dict(self._body(options), messages=self._messages(messages, system), stream=True,
                    stream_options={"include_usage": True})
        if tools:
            body["tools"] = list(tools)
        limit = timeout if timeout is not None else self.timeout
        conn, resp = self._call("POST", "/chat/completions", body, limit)
        return RemoteChatStream(conn, resp, self.base_url, limit)

    async def astream(self, messages: Messages, tools: Optional[List[Any]] = None, *,
                      system: Optional[str] = None, think: Optional[bool] = None,
                      **options: Any) -> AsyncIterator[str]:
        """Async iterator of text chunks (the stream runs in a worker thread); cancelling closes the connection."""
        s = await asyncio.to_thread(lambda: self.stream(messages, tools, system=system, think=think, **options))
        done = object()
        try:
            while True:
                chunk = await asyncio.to_thread(next, s, done)
                if chunk is done:
                    return
                yield chunk  # type: ignore[misc]
        finally:
            s.close()

    def embed(self, *args: Any, **kwargs: Any) -> Any:
        """Not available (capabilities.embed is False)."""
        raise CapabilityNotSupportedError("embeddings are not supported by the remote provider "
                                          "(capabilities.embed is False)", "embed")

    def close(self) -> None:
        """Nothing is held between requests."""

    def __enter__(self) -> "RemoteProvider":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class RemoteChatStream(Iterator[str]):
    """Text chunks of one streamed remote answer; ``.result`` (a :class:`ChatResult`) once exhausted. A reasoning
    model's reasoning (``reasoning_content`` / ``reasoning`` deltas, as ``ovgenai-c serve``, vLLM and others stream
    it) is not among the chunks: :meth:`pieces` gives it apart, and the result's ``message["thinking"]``."""

    thinking_opened = None  # (the endpoint splits the reasoning itself: nothing for a local splitter to do)

    def __init__(self, conn: _Conn, resp: Any, where: str, timeout: Optional[float]) -> None:
        self._conn = conn
        self._events = sse_data(resp)
        self._where = where
        self._deadline = (time.monotonic() + timeout) if timeout is not None else None
        self._timeout = timeout
        self._parts: List[str] = []
        self._thought: List[str] = []
        self._ready: "deque[Piece]" = deque()  # pieces of the last event not yet given
        self._choice: Dict[str, Any] = {}
        self._calls: Dict[int, Dict[str, Any]] = {}
        self._usage: Optional[Dict[str, Any]] = None
        self._closed = False
        self.result: Optional[ChatResult] = None

    def __iter__(self) -> "RemoteChatStream":
        return self

    def __next__(self) -> str:
        while True:
            piece = self.next_piece()
            if piece is None:
                raise StopIteration
            if piece[0] == CONTENT:
                return piece[1]

    def pieces(self) -> Iterator[Piece]:
        """The answer as ``(kind, text)`` pieces: "thinking" (the endpoint's reasoning deltas) or "content"."""
        while True:
            piece = self.next_piece()
            if piece is None:
                return
            yield piece

    def next_piece(self) -> Optional[Piece]:
        """The next ``(kind, text)`` piece, or None at the end (then :attr:`result` is set)."""
        while not self._ready:
            if self._closed or not self._read_event():
                return None
        return self._ready.popleft()

    def _read_event(self) -> bool:
        """Read one event into the ready pieces; False at the stream's end."""
        if self._deadline is not None and time.monotonic() > self._deadline:
            self.close()
            raise errors.GenerationTimeoutError(f"{self._where}: the stream exceeded the timeout of "
                                                f"{self._timeout:g} s and was closed")
        try:
            data = next(self._events)
        except StopIteration:
            self.close()
            raise RemoteError(f"{self._where}: the stream ended without [DONE]", 200) from None
        except socket.timeout:
            self.close()
            raise errors.GenerationTimeoutError(f"{self._where}: no data within {self._timeout:g} s") from None
        except OSError as exc:
            self.close()
            raise RemoteUnavailableError(f"{self._where}: the stream broke: {exc}") from None
        if data.strip() == "[DONE]":
            self._finish()
            return False
        try:
            ev = json.loads(data)
        except ValueError:
            self.close()
            raise RemoteError(f"{self._where}: a stream event is not JSON: {data[:200]!r}", 200) from None
        if isinstance(ev, dict) and "error" in ev:  # an error after the answer started
            self.close()
            err = ev["error"] if isinstance(ev["error"], dict) else {}
            raise _error_from(_STREAM_ERROR_STATUS.get(str(err.get("code") or err.get("type")), 500),
                              data.encode(), self._where)
        if ev.get("usage"):
            self._usage = ev["usage"]
        for ch in ev.get("choices") or []:
            delta = ch.get("delta") or {}
            for c in delta.get("tool_calls") or []:  # whole, or in pieces (arguments as string fragments)
                call = self._calls.setdefault(int(c.get("index", len(self._calls))),
                                              {"type": "function", "function": {"name": None, "arguments": ""}})
                fn = c.get("function") or {}
                if fn.get("name"):
                    call["function"]["name"] = fn["name"]
                args = fn.get("arguments")
                if isinstance(args, str) and isinstance(call["function"]["arguments"], str):
                    call["function"]["arguments"] += args
                elif args is not None:
                    call["function"]["arguments"] = args
            if ch.get("finish_reason"):
                self._choice["finish_reason"] = ch["finish_reason"]
            thought = _reasoning(delta)
            if thought:
                self._thought.append(thought)
                self._ready.append((THINKING, thought))
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                self._parts.append(piece)
                self._ready.append((CONTENT, piece))
        return True

    def _finish(self) -> None:
        msg: Dict[str, Any] = {"content": self.text}
        if self._thought:
            msg["reasoning_content"] = "".join(self._thought)
        if self._calls:
            msg["tool_calls"] = [self._calls[k] for k in sorted(self._calls)]
        self.result = RemoteProvider._result({"message": msg, **self._choice}, self._usage, self.text)
        self.close()

    @property
    def text(self) -> str:
        """The text streamed so far."""
        return "".join(self._parts)

    def close(self) -> None:
        """Close the connection (the server cancels the generation when it notices)."""
        if not self._closed:
            self._closed = True
            self._conn.close()

    def __enter__(self) -> "RemoteChatStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_provider(model: Any, **kwargs: Any) -> Any:
    """A provider for ``model``: a :class:`RemoteProvider` for ``openai+http[s]://...#model`` specs (keywords:
    ``api_key``, ``timeout``, ``options``), else a local :class:`~ovgenai_c.provider.Provider` (its keywords)."""
    if is_remote_spec(model):
        return RemoteProvider.from_spec(model, **kwargs)
    from .provider import Provider

    return Provider(model, **kwargs)
