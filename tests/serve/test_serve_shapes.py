"""Answer shapes that the tiny model cannot produce on demand — tool calls, a generation timeout — through a
scripted fake provider (what the provider returns is given; what is tested is how the server renders it)."""
from __future__ import annotations

import json
from typing import Any, Iterator, List, Optional

import httpx
import pytest

from ovgenai_c import errors
from ovgenai_c.provider import ChatResult
from ovgenai_c.serve import ServeConfig, create_app
from serve_helpers import FakeCaps, FakeInfo, ServerThread

HELLO = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
RAW = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


class ScriptedStream:
    def __init__(self, pieces: List[str], result: Optional[ChatResult], fail: Optional[BaseException]) -> None:
        self._it = iter(pieces)
        self._result = result
        self._fail = fail
        self.result: Optional[ChatResult] = None

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        for piece in self._it:
            return piece
        if self._fail is not None:
            raise self._fail
        self.result = self._result
        raise StopIteration

    def close(self) -> None:
        pass


class ScriptedProvider:
    def __init__(self) -> None:
        self.capabilities = FakeCaps(tools=True)
        self.info = FakeInfo()
        self.default_options: dict = {}
        self.calls: List[Any] = []

    def stream(self, messages: Any, tools: Any = None, **kw: Any) -> ScriptedStream:
        self.calls.append((messages, tools, kw))
        if kw.get("num_predict") == 50:  # the "slow" request: times out after one piece
            return ScriptedStream(["partial"], None, errors.GenerationTimeoutError("stream exceeded its timeout of 1 s"))
        calls = [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
        res = ChatResult({"role": "assistant", "content": "", "tool_calls": calls} if tools else
                         {"role": "assistant", "content": RAW},
                         {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
                         "tool_calls" if tools else "stop")
        return ScriptedStream([RAW[:20], RAW[20:]], res, None)


@pytest.fixture(scope="module")
def srv(tiny_root):
    providers: List[ScriptedProvider] = []

    def factory(path, index):
        providers.append(ScriptedProvider())
        return providers[-1]
    app = create_app(ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny"), provider_factory=factory)
    with ServerThread(app) as s:
        s.providers = providers
        yield s


def test_openai_tool_calls(srv):
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        r = c.post("/v1/chat/completions", json={"messages": HELLO, "tools": TOOLS}).json()
        choice = r["choices"][0]
        assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
        call = choice["message"]["tool_calls"][0]
        assert call["type"] == "function" and call["id"].startswith("call_")
        assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
        assert srv.providers[0].calls[-1][1] == TOOLS  # the tools reached the provider (and its template)
        # streamed: the raw tool-call text is held back; the call comes as one delta, then the finish reason
        with c.stream("POST", "/v1/chat/completions", json={"messages": HELLO, "tools": TOOLS, "stream": True}) as s:
            events = [line[6:] for line in s.iter_lines() if line.startswith("data: ")]
        chunks = [json.loads(e) for e in events[:-1]]
        deltas = [ch["choices"][0]["delta"] for ch in chunks]
        assert not any("<tool_call>" in (d.get("content") or "") for d in deltas)
        calls = [d["tool_calls"] for d in deltas if d.get("tool_calls")]
        assert len(calls) == 1 and calls[0][0]["index"] == 0 and calls[0][0]["function"]["name"] == "get_weather"
        assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls" and events[-1] == "[DONE]"
        # tool_choice none: the tools are not passed, the raw text is the answer
        r = c.post("/v1/chat/completions", json={"messages": HELLO, "tools": TOOLS, "tool_choice": "none"}).json()
        assert r["choices"][0]["message"]["content"] == RAW and srv.providers[0].calls[-1][1] is None
        r = c.post("/v1/chat/completions", json={"messages": HELLO, "tools": TOOLS, "tool_choice": "required"})
        assert r.status_code == 400 and r.json()["error"]["param"] == "tool_choice"


def test_ollama_tool_calls(srv):
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        r = c.post("/api/chat", json={"messages": HELLO, "tools": TOOLS, "stream": False}).json()
        assert r["message"]["tool_calls"] == [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
        assert r["done_reason"] == "stop"
        with c.stream("POST", "/api/chat", json={"messages": HELLO, "tools": TOOLS}) as s:
            lines = [json.loads(x) for x in s.iter_lines() if x]
        assert [bool(x["message"].get("tool_calls")) for x in lines] == [True, False] and lines[-1]["done"]


def test_assistant_tool_calls_in_the_history_reach_the_template_as_objects(srv):
    history = HELLO + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        assert c.post("/v1/chat/completions", json={"messages": history, "tools": TOOLS}).status_code == 200
    sent = srv.providers[0].calls[-1][0]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}
    assert sent[2] == {"role": "tool", "content": "sunny", "tool_call_id": "call_1"}


def test_a_generation_timeout(srv):
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        r = c.post("/v1/chat/completions", json={"messages": HELLO, "max_tokens": 50})
        assert r.status_code == 504 and r.json()["error"]["code"] == "timeout"
        r = c.post("/api/chat", json={"messages": HELLO, "options": {"num_predict": 50}, "stream": False})
        assert r.status_code == 504 and "timeout" in r.json()["error"]
        with c.stream("POST", "/v1/chat/completions", json={"messages": HELLO, "max_tokens": 50, "stream": True}) as s:
            events = [line[6:] for line in s.iter_lines() if line.startswith("data: ")]
        assert json.loads(events[-2])["error"]["code"] == "timeout" and events[-1] == "[DONE]"
        with c.stream("POST", "/api/chat", json={"messages": HELLO, "options": {"num_predict": 50}}) as s:
            lines = [json.loads(x) for x in s.iter_lines() if x]
        assert lines[0]["message"]["content"] == "partial" and "timeout" in lines[-1]["error"]


def test_images_are_refused_with_the_reason(srv):
    """No served model takes images (text models on LLMPipeline; VLMs need the official library): OpenAI image
    content parts and Ollama images get a 400 that says why, before anything is generated."""
    image_part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        def calls():
            return sum(len(p.calls) for p in srv.providers)

        before = calls()
        r = c.post("/v1/chat/completions", json={"messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image_part]}]})
        assert r.status_code == 400 and r.json()["error"]["param"] == "messages"
        msg = r.json()["error"]["message"]
        assert "content[1]: an image part cannot be served" in msg and "VLMPipeline" in msg and "official" in msg
        r = c.post("/api/chat", json={"messages": [{"role": "user", "content": "x", "images": ["AAAA"]}],
                                      "stream": False})
        assert r.status_code == 400 and "images are not supported: this server serves text models" in r.text
        r = c.post("/api/generate", json={"prompt": "x", "images": ["AAAA"], "stream": False})
        assert r.status_code == 400 and "'images' is not supported: this server serves text models" in r.text
        assert calls() == before


@pytest.mark.parametrize("calls, field", [
    (5, "messages[1].tool_calls must be a list"),
    ("get_weather", "messages[1].tool_calls must be a list"),
    ([5], "messages[1].tool_calls[0] must be a tool call object"),
    ([{"function": "abc"}], "messages[1].tool_calls[0].function must be an object"),
    ([{"function": {"arguments": {}}}], "messages[1].tool_calls[0].function.name"),
    ([{"function": {"name": "f", "arguments": 3}}], "messages[1].tool_calls[0].function.arguments"),
])
def test_malformed_tool_calls_in_the_history_are_400_naming_the_field(srv, calls, field):
    history = HELLO + [{"role": "assistant", "content": "", "tool_calls": calls}]
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        r = c.post("/v1/chat/completions", json={"messages": history, "tools": TOOLS})
        assert r.status_code == 400, r.text
        assert r.json()["error"]["param"] == "messages" and field in r.json()["error"]["message"]
        r = c.post("/api/chat", json={"messages": history, "tools": TOOLS, "stream": False})
        assert r.status_code == 400 and list(r.json()) == ["error"] and field in r.json()["error"], r.text


def test_a_generation_timeout_names_the_servers_timeout(tiny_root):
    # the provider is given the time left after queueing (e.g. 2.4871234 s); the answer names --request-timeout
    class LateProvider(ScriptedProvider):
        def stream(self, messages, tools=None, **kw):
            return ScriptedStream(["partial"], None, errors.GenerationTimeoutError(
                f"the request exceeded its timeout of {kw['timeout']} s and was cancelled"))

    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", request_timeout=2.5)
    with ServerThread(create_app(cfg, provider_factory=lambda path, index: LateProvider())) as s, \
            httpx.Client(base_url=s.url, timeout=60) as c:
        r = c.post("/v1/chat/completions", json={"messages": HELLO})
        err = r.json()["error"]
        assert r.status_code == 504 and err["code"] == "timeout"
        assert err["message"] == ("the request exceeded the server's timeout of 2.5 s (queueing included) and was "
                                  "cancelled")
        r = c.post("/api/chat", json={"messages": HELLO, "stream": False})
        assert r.status_code == 504 and "timeout of 2.5 s" in r.json()["error"]
        with c.stream("POST", "/api/chat", json={"messages": HELLO}) as st:
            lines = [json.loads(x) for x in st.iter_lines() if x]
        assert "timeout of 2.5 s" in lines[-1]["error"]


def test_max_completion_tokens_errors_name_it(srv):
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        for bad in (0, "10", 2**64):
            r = c.post("/v1/chat/completions", json={"messages": HELLO, "max_completion_tokens": bad})
            err = r.json()["error"]
            assert r.status_code == 400 and err["param"] == "max_completion_tokens", err
            assert err["message"].startswith("max_completion_tokens") and "max_tokens " not in err["message"], err
