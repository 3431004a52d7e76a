"""Helpers for the server tests: run an app with uvicorn on 127.0.0.1 in a background thread, fake providers."""
from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional

from ovgenai_c.provider import ChatResult


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerThread:
    """``with ServerThread(app) as srv: srv.url`` — uvicorn in a daemon thread, stopped and joined on exit."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.app = app
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, name="uvicorn-test", daemon=True)

    def __enter__(self) -> "ServerThread":
        self.thread.start()
        for _ in range(6000):  # bounded: uvicorn binds in milliseconds
            if self.server.started or not self.thread.is_alive():
                break
            threading.Event().wait(0.01)
        assert self.server.started, "the test server did not start"
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(60)
        assert not self.thread.is_alive(), "the test server did not stop"

    @property
    def state(self) -> Any:
        return self.app.state.server


def wait_until(predicate: Any, what: str, tries: int = 3000) -> None:
    """Poll ``predicate`` (bounded; not a timing assertion: fails only if the state is never reached)."""
    for _ in range(tries):
        if predicate():
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"never reached: {what}")


# --- a fake provider: the server's queueing and limits without a model -------------------------------------
@dataclass
class FakeCaps:
    context_length: Optional[int] = 64
    tools: bool = False
    think: bool = False


class FakeInfo:
    format = "ir"
    chat_template = None


class GatedStream:
    """Yields "a", then blocks until ``gate`` is set, then "b"; ``close()`` ends it early."""

    def __init__(self, provider: "GatedProvider") -> None:
        self.provider = provider
        self.result: Optional[ChatResult] = None
        self._step = 0
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        self._step += 1
        if self._step == 1:
            return "a"
        if self._step == 2:
            while not (self.provider.gate.is_set() or self.closed.is_set()):
                self.provider.gate.wait(0.01)
            if not self.closed.is_set():
                return "b"
        if self.result is None and not self.closed.is_set():
            self.result = ChatResult({"role": "assistant", "content": "ab"},
                                     {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}, "stop")
        raise StopIteration

    def close(self) -> None:
        self.closed.set()
        self.provider.closed += 1


class GatedProvider:
    def __init__(self, gate: threading.Event) -> None:
        self.gate = gate
        self.capabilities = FakeCaps()
        self.info = FakeInfo()
        self.default_options: Dict[str, Any] = {}
        self.started: List[Dict[str, Any]] = []
        self.closed = 0

    def stream(self, messages: Any, tools: Any = None, **kw: Any) -> GatedStream:
        self.started.append(dict(kw, messages=messages))
        return GatedStream(self)
