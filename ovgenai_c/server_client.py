"""A running ``ovgenai-c serve`` as the command line's warm path: find it cheaply, check it is ours and serves the
model asked for, stream one answer from its Ollama ``/api/generate``. Standard library only (the CLI imports it
on every ``generate``; no starlette, no httpx)."""
from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.parse
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional

DEFAULT_URL = "http://127.0.0.1:8000"
CONNECT_TIMEOUT = 0.2  # seconds: a server on loopback accepts at once; nothing there → refused at once
INFO_PATH = "/ovgenai_c/info"
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


class ServerUnusable(Exception):
    """Why the server is not used (the caller falls back to loading the model in-process)."""


class ServerError(Exception):
    """The server answered the request with an error (printed as one line)."""


@dataclass
class Server:
    url: str
    info: Dict[str, Any]
    api_key: Optional[str]

    def _conn(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        return _connection(self.url, timeout)

    def _headers(self) -> Dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/x-ndjson"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def model_for(self, path: str) -> Optional[Dict[str, Any]]:
        """The server's entry for the model at ``path`` (compared by real path), or None."""
        real = os.path.realpath(path)
        for m in self.info.get("models") or []:
            if isinstance(m, dict) and m.get("path") == real:
                return m
        return None

    def generate(self, body: Dict[str, Any]) -> "Answer":
        """Start one streamed /api/generate; errors before the first line raise :class:`ServerError`."""
        return self._post("/api/generate", body)

    def chat(self, body: Dict[str, Any]) -> "Answer":
        """Start one streamed /api/chat (``body["messages"]``)."""
        return self._post("/api/chat", body)

    def _post(self, path: str, body: Dict[str, Any]) -> "Answer":
        conn = self._conn(None)  # the answer may take long: no read timeout once the server accepted it
        try:
            conn.request("POST", path, json.dumps(dict(body, stream=True)).encode(), self._headers())
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise ServerError(f"the server at {self.url} failed: {exc}") from None
        if resp.status != 200:
            text = resp.read().decode("utf-8", "replace")
            conn.close()
            raise ServerError(_error_text(text, resp.status))
        return Answer(conn, resp)


class Answer:
    """The pieces of one streamed answer; ``final`` is the last (done) line once iteration ends."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        self._conn = conn
        self._resp = resp
        self.final: Optional[Dict[str, Any]] = None

    def __iter__(self) -> Iterator[str]:
        """The answer's text pieces (a thinking model's reasoning left out: see :meth:`pieces`)."""
        for kind, text in self.pieces():
            if kind == "content":
                yield text

    def pieces(self) -> Iterator["tuple[str, str]"]:
        """``(kind, text)`` pieces: "thinking" (a thinking model's reasoning, which the server streams apart, as
        Ollama's ``thinking``) or "content"."""
        try:
            while True:
                line = self._resp.readline()
                if not line:
                    raise ServerError("the server closed the connection before the answer ended")
                if not line.strip():
                    continue
                obj = json.loads(line)
                if "error" in obj:
                    raise ServerError(_error_text(json.dumps(obj), 200))
                message = obj.get("message") or {}
                thinking = obj.get("thinking") or message.get("thinking")
                if thinking:
                    yield "thinking", thinking
                piece = obj.get("response") or message.get("content")
                if piece:
                    yield "content", piece
                if obj.get("done"):
                    self.final = obj
                    return
        finally:
            self.close()

    def close(self) -> None:
        """Close the connection (the server cancels the generation when its client is gone)."""
        try:
            sock = self._conn.sock
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._conn.close()


def _error_text(text: str, status: int) -> str:
    """The server's error message as one line."""
    return "; ".join(ln.strip() for ln in _error_message(text, status).splitlines() if ln.strip())


def _error_message(text: str, status: int) -> str:
    try:
        err = json.loads(text).get("error")
        if isinstance(err, dict):
            err = err.get("message")
        if err:
            return str(err)
    except (ValueError, AttributeError):
        pass
    return f"the server answered HTTP {status}: {text.strip()[:200]}"


def _connection(url: str, timeout: Optional[float]) -> http.client.HTTPConnection:
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ServerUnusable(f"not an http(s) URL: {url!r}")
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    return cls(u.hostname, u.port or (443 if u.scheme == "https" else 80), timeout=timeout)


OFF = ("off", "none", "0", "no")


def server_url(explicit: Optional[str]) -> "tuple[str, bool]":
    """(URL, whether the user named it): ``--server``, then ``OVGENAI_C_SERVER``, then the default on loopback.
    ``OVGENAI_C_SERVER=off`` turns the server path off (:class:`ServerUnusable`)."""
    if explicit:
        return explicit.rstrip("/"), True
    env = os.environ.get("OVGENAI_C_SERVER", "").strip()
    if env.lower() in OFF:
        raise ServerUnusable(f"OVGENAI_C_SERVER={env}")
    if env:
        return env.rstrip("/"), True
    return DEFAULT_URL, False


def find_server(url: str, named: bool, timeout: float = CONNECT_TIMEOUT) -> Server:
    """The ovgenai_c server at ``url``, or :class:`ServerUnusable` saying why not. Only loopback unless the URL
    was named by the user; a short connect timeout; the answer must come from our own ``/ovgenai_c/info``."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if not named and host not in LOOPBACK:
        raise ServerUnusable(f"{url} is not on loopback")
    api_key = os.environ.get("OVGENAI_C_API_KEY") or None
    conn = _connection(url, timeout)
    try:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        conn.request("GET", INFO_PATH, headers=headers)
        conn.sock.settimeout(max(timeout, 2.0))  # connected: our server answers info at once
        resp = conn.getresponse()
        text = resp.read()
    except (OSError, http.client.HTTPException) as exc:
        raise ServerUnusable(f"no server at {url} ({exc or type(exc).__name__})") from None
    finally:
        conn.close()
    if resp.status == 401:
        raise ServerUnusable(f"the server at {url} wants an API key (set OVGENAI_C_API_KEY)")
    try:
        info = json.loads(text)
    except ValueError:
        info = None
    if resp.status != 200 or not isinstance(info, dict) or info.get("name") != "ovgenai_c":
        raise ServerUnusable(f"the server at {url} is not an ovgenai-c server (GET {INFO_PATH}: HTTP {resp.status})")
    return Server(url, info, api_key)
