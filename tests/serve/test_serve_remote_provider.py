"""The provider facade over an OpenAI-compatible endpoint (``openai+http://...#model``), tested against our own
server standing in for one (OpenVINO Model Server's /v3 speaks the same API): the same greedy answers as the local
provider, streaming, disconnect-cancel, capabilities from /v1/models, errors as the provider's own types, the
bearer key and timeouts."""
from __future__ import annotations

import asyncio
import threading

import pytest

from ovgenai_c import errors
from ovgenai_c.provider import (CapabilityNotSupportedError, CatalogError, OptionError, Provider, RemoteAuthError,
                                RemoteProvider, RemoteUnavailableError, SessionPool, open_provider)
from ovgenai_c.provider.remote import parse_spec
from ovgenai_c.serve import ServeConfig, create_app
from serve_helpers import GatedProvider, ServerThread, free_port, wait_until

GREEDY = {"temperature": 0, "num_predict": 8}
HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture(scope="module")
def server(tiny_server):
    return tiny_server


@pytest.fixture(scope="module")
def local(bundled, tiny_root):
    pool = SessionPool()
    yield Provider(tiny_root / "tiny", library=bundled, pool=pool)
    pool.close(timeout=30)


@pytest.fixture(scope="module")
def remote(server):
    return open_provider(f"openai+{server.url}/v1#tiny")


def test_spec_and_capabilities_from_the_models_list(server, remote, tiny_root):
    assert isinstance(remote, RemoteProvider) and remote.model == "tiny" and remote.base_url == server.url + "/v1"
    caps = remote.capabilities
    assert caps.chat and caps.prompt and caps.stream and not caps.embed and not caps.think
    assert parse_spec("openai+https://h:1/v3#a/b") == ("https://h:1/v3", "a/b")
    with pytest.raises(errors.InvalidParameterError, match="openai\\+http://HOST:PORT/v1#MODEL"):
        parse_spec("http://h/v1#m")
    with pytest.raises(CatalogError, match="did you mean 'tiny'"):
        open_provider(f"openai+{server.url}/v1#tinny")
    # tiny and other/tiny (and what other tests of the session added to the shared root): name one
    with pytest.raises(errors.InvalidParameterError, match=r"serves \d+ models \(.*other/tiny, tiny"):
        open_provider(f"openai+{server.url}/v1")
    assert isinstance(open_provider(tiny_root / "tiny", pool=SessionPool()), Provider)  # a path stays local


def test_greedy_answers_equal_the_local_provider(remote, local):
    assert remote.prompt("Hello", **GREEDY) == local.prompt("Hello", **GREEDY)
    assert remote.prompt("Hello", system="Be brief", **GREEDY) == local.prompt("Hello", system="Be brief", **GREEDY)
    r, l = remote.chat(HELLO, **GREEDY), local.chat(HELLO, **GREEDY)
    assert r.message == l.message and r.finish_reason == l.finish_reason == "length"
    assert r.usage == l.usage
    stopped = remote.chat(HELLO, temperature=0, num_predict=8, stop=[l.text.split()[1]])
    assert stopped.text == local.chat(HELLO, temperature=0, num_predict=8, stop=[l.text.split()[1]]).text


def test_streaming_equals_the_local_stream(remote, local):
    with remote.stream(HELLO, **GREEDY) as rs:
        parts = list(rs)
    with local.stream(HELLO, **GREEDY) as ls:
        local_parts = list(ls)
    # (how many pieces the 8 tokens come in depends on timing: under load the server's events coalesce; that the
    # stream arrives while the generation runs is what test_closing_a_stream_cancels_... shows)
    assert parts and "".join(parts) == "".join(local_parts) == rs.text
    assert rs.result.text == ls.result.text and rs.result.usage == ls.result.usage
    assert rs.result.finish_reason == ls.result.finish_reason

    async def consume():
        return [c async for c in remote.astream(HELLO, **GREEDY)]
    assert "".join(asyncio.run(consume())) == "".join(local_parts)


def test_closing_a_stream_cancels_the_generation_on_the_server(server, remote):
    slot = server.state.registry.get_loaded("tiny")
    before = (slot.stats.cancelled, slot.stats.completed)
    s = remote.stream(HELLO, temperature=0, num_predict=4000)
    assert next(s)
    s.close()
    wait_until(lambda: slot.stats.cancelled == before[0] + 1 and slot.running == 0, "the generation cancelled")
    assert slot.stats.completed == before[1]  # it did not run to its 4000 tokens
    assert remote.prompt("Hello", **GREEDY)  # the pipeline is back in the pool


def test_errors_have_the_local_providers_types(remote, local):
    for bad in ({"temperature": -1}, {"no_such_option": 1}):  # checked before sending, as locally
        with pytest.raises(OptionError) as r_exc:
            remote.chat(HELLO, **bad)
        with pytest.raises(OptionError) as l_exc:
            local.chat(HELLO, **bad)
        assert r_exc.value.option == l_exc.value.option
    with pytest.raises(OptionError) as exc:  # our server has no top_k over the OpenAI API: refused, named
        remote.chat(HELLO, top_k=5)
    assert exc.value.option == "top_k" and "HTTP 400" in str(exc.value)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    if not local.capabilities.tools:
        with pytest.raises(CapabilityNotSupportedError):
            local.chat(HELLO, tools=tools)
        with pytest.raises(CapabilityNotSupportedError):
            remote.chat(HELLO, tools=tools)
    with pytest.raises(CapabilityNotSupportedError):
        remote.chat(HELLO, think=True)
    with pytest.raises(CapabilityNotSupportedError):
        remote.embed("x")
    with pytest.raises(errors.InvalidParameterError):
        remote.chat([])


def test_unreachable_endpoint():
    with pytest.raises(RemoteUnavailableError, match="cannot reach"):
        RemoteProvider(f"http://127.0.0.1:{free_port()}/v1", "m")


def test_bearer_key(bundled, tiny_root, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", api_key="sekrit")
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        with pytest.raises(RemoteAuthError, match="HTTP 401") as exc:
            RemoteProvider(srv.url + "/v1", "tiny")
        assert exc.value.http_status == 401
        with pytest.raises(RemoteAuthError):
            RemoteProvider(srv.url + "/v1", "tiny", api_key="wrong")
        assert RemoteProvider(srv.url + "/v1", "tiny", api_key="sekrit").prompt("Hello", **GREEDY)
        monkeypatch.setenv("OPENAI_API_KEY", "sekrit")
        assert open_provider(f"openai+{srv.url}/v1#tiny").prompt("Hello", **GREEDY)


def _gated(tiny_root, gate, providers, **kw):
    def factory(path, index):
        p = GatedProvider(gate)
        providers.append(p)
        return p
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", **kw)
    return create_app(cfg, provider_factory=factory)


def test_timeout_busy_and_server_timeout(tiny_root):
    gate, providers = threading.Event(), []
    with ServerThread(_gated(tiny_root, gate, providers, parallel=1, max_queue=0, request_timeout=None)) as srv:
        remote = RemoteProvider(srv.url + "/v1", "tiny", timeout=0.5)
        s = remote.stream(HELLO)
        assert next(s) == "a"  # then the fake model waits for the gate: the client's timeout ends it
        with pytest.raises(errors.GenerationTimeoutError):
            next(s)
        wait_until(lambda: providers[0].closed >= 1, "the server cancelled the generation")
        held = RemoteProvider(srv.url + "/v1", "tiny").stream(HELLO)
        assert next(held) == "a"
        with pytest.raises(errors.RequestBusyError, match="HTTP 429"):  # --max-queue 0, one running
            RemoteProvider(srv.url + "/v1", "tiny").chat(HELLO)
        gate.set()
        assert list(held) == ["b"] and held.result.text == "ab"
    gate2, providers2 = threading.Event(), []
    with ServerThread(_gated(tiny_root, gate2, providers2, parallel=1, request_timeout=0.3)) as srv:
        held = RemoteProvider(srv.url + "/v1", "tiny", timeout=60).stream(HELLO)
        assert next(held) == "a"
        with pytest.raises(errors.GenerationTimeoutError, match="HTTP 504"):  # the server's own timeout (queued)
            RemoteProvider(srv.url + "/v1", "tiny", timeout=60).chat(HELLO)
        held.close()
        gate2.set()
