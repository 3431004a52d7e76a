"""Shared HTTP plumbing: bounded JSON bodies, error answers in each API's shape, bearer-token auth, streams that
always clean up."""
from __future__ import annotations

import hmac
import json
from typing import Any, Awaitable, Callable, Dict, Optional

from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse

from .errors import HTTPError, bad_request, status_and_body


def is_ollama_path(path: str) -> bool:
    return path.startswith("/api/")


async def read_json(request: Request, limit: int) -> Dict[str, Any]:
    """The request's JSON object; more than ``limit`` bytes → 413, not JSON / not an object → 400."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise HTTPError(413, f"request body of {int(declared)} bytes is larger than the server's limit of {limit} "
                             "bytes (--max-body-bytes)", code="request_too_large")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HTTPError(413, f"request body is larger than the server's limit of {limit} bytes "
                                 "(--max-body-bytes)", code="request_too_large")
    if not body:
        raise bad_request("the request body is empty; expected a JSON object")
    try:
        data = json.loads(bytes(body))
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise bad_request(f"the request body must be a JSON object, not {type(data).__name__}")
    return data


def sse(obj: Any) -> bytes:
    """One server-sent event carrying ``obj`` as JSON (OpenAI's streams)."""
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


def error_response(exc: BaseException, ollama: bool) -> JSONResponse:
    status, body = status_and_body(exc, ollama)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, headers=headers)


def endpoint(ollama: bool) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Wrap a route (function or method): any exception becomes an error answer in the API's own shape."""
    def wrap(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def run(*args: Any) -> Any:
            try:
                return await fn(*args)
            except Exception as exc:
                return error_response(exc, ollama)
        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        return run
    return wrap


class CleanupStreamingResponse(StreamingResponse):
    """A streaming response that runs ``cleanup`` however it ends — also when the client is gone before the
    body iterator ever started (then the iterator's own ``finally`` never runs)."""

    def __init__(self, content: Any, cleanup: Callable[[], Awaitable[None]], **kw: Any) -> None:
        super().__init__(content, **kw)
        self._cleanup = cleanup

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._cleanup()


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <key>`` (401 otherwise)."""

    def __init__(self, app: Any, api_key: Optional[str]) -> None:
        self.app = app
        self.key = api_key.encode() if api_key else None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.key is None:
            await self.app(scope, receive, send)
            return
        header = b""
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                header = value
                break
        scheme, _, token = header.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.key):
            await self.app(scope, receive, send)
            return
        msg = "missing or wrong API key: send 'Authorization: Bearer <key>'" if header else \
            "this server requires an API key: send 'Authorization: Bearer <key>'"
        err = HTTPError(401, msg, code="invalid_api_key")
        await error_response(err, is_ollama_path(scope.get("path", "")))(scope, receive, send)
