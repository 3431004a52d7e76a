"""``ovgenai-c serve`` serving another OpenAI-compatible endpoint's model as one of its own (``remote_models`` /
``--remote NAME=openai+http://HOST:PORT/v1#MODEL``, or such a spec as the default model): a second server started
here on 127.0.0.1 stands in for the endpoint. Its answers come through unchanged (the same greedy text, stream and
usage as asking it directly), the model is listed, described and shown as scheduled remotely, a closed stream
cancels the generation upstream, and bad specs or unknown upstream models fail clearly."""
from __future__ import annotations

import httpx
import pytest

from ovgenai_c.provider import RemoteProvider
from ovgenai_c.serve import ServeConfig, create_app
from serve_helpers import ServerThread, free_port, wait_until

GREEDY = {"temperature": 0, "num_predict": 8}
HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture(scope="module")
def upstream(tiny_server):
    return tiny_server


@pytest.fixture(scope="module")
def front(bundled, tiny_root, upstream):
    """A server with its own local default model and the upstream's ``tiny`` as ``up``."""
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny",
                      remote_models={"up": f"openai+{upstream.url}/v1#tiny"})
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        yield srv


def test_answers_are_the_upstreams(front, upstream):
    direct = RemoteProvider(upstream.url + "/v1", "tiny")
    via = RemoteProvider(front.url + "/v1", "up")
    assert via.prompt("Hello", **GREEDY) == direct.prompt("Hello", **GREEDY)
    r, d = via.chat(HELLO, **GREEDY), direct.chat(HELLO, **GREEDY)
    assert r.message == d.message and r.finish_reason == d.finish_reason == "length" and r.usage == d.usage
    with via.stream(HELLO, **GREEDY) as vs:
        parts = list(vs)
    with direct.stream(HELLO, **GREEDY) as ds:
        direct_parts = list(ds)
    assert "".join(parts) == "".join(direct_parts) and vs.result.usage == ds.result.usage
    # the same model served locally by the front server answers the same (the upstream runs the same files)
    assert RemoteProvider(front.url + "/v1", "tiny").prompt("Hello", **GREEDY) == direct.prompt("Hello", **GREEDY)
    # Ollama's chat route of the front server, answered upstream
    body = {"model": "up", "messages": HELLO, "stream": False, "options": {"temperature": 0, "num_predict": 8}}
    ans = httpx.post(front.url + "/api/chat", json=body, timeout=120).json()
    assert ans["message"]["content"] == d.text and ans["eval_count"] == d.usage["completion_tokens"]


def test_listed_described_and_scheduled_remotely(front, upstream):
    ids = {m["id"]: m for m in httpx.get(front.url + "/v1/models", timeout=30).json()["data"]}
    assert "tiny" in ids and ids["up"]["owned_by"] == "remote"
    assert httpx.get(front.url + "/v1/models/up", timeout=30).json()["id"] == "up"
    tags = {m["name"]: m for m in httpx.get(front.url + "/api/tags", timeout=30).json()["models"]}
    assert tags["up"]["details"]["format"] == "remote" and "tiny" in tags
    show = httpx.post(front.url + "/api/show", json={"model": "up"}, timeout=30).json()
    assert show["model_info"]["general.format"] == "remote" and "completion" in show["capabilities"]
    RemoteProvider(front.url + "/v1", "up").prompt("Hi", **GREEDY)
    info = httpx.get(front.url + "/ovgenai_c/info", timeout=30).json()
    up = next(m for m in info["models"] if m["name"] == "up")
    assert up["scheduling"]["mode"] == "remote" and up["path"] == f"openai+{upstream.url}/v1#tiny"
    assert up["library_kind"] == "remote"
    local = next(m for m in info["models"] if m["name"] == "tiny")
    assert local["scheduling"]["mode"] != "remote"


def test_closing_a_stream_cancels_upstream(front, upstream):
    slot = upstream.state.registry.get_loaded("tiny")
    before = (slot.stats.cancelled, slot.stats.completed)
    s = RemoteProvider(front.url + "/v1", "up").stream(HELLO, temperature=0, num_predict=4000)
    assert next(s)
    s.close()
    wait_until(lambda: slot.stats.cancelled == before[0] + 1 and slot.running == 0, "the upstream generation cancelled")
    assert slot.stats.completed == before[1]  # it did not run to its 4000 tokens
    front_slot = front.state.registry.get_loaded("up")
    wait_until(lambda: front_slot.running == 0, "the front server's lease given back")


def test_a_remote_default_model(bundled, tiny_root, upstream):
    cfg = ServeConfig(default_model=f"openai+{upstream.url}/v1#tiny")
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        info = httpx.get(srv.url + "/ovgenai_c/info", timeout=30).json()
        assert info["default_model"] == "tiny" and info["models"][0]["loaded"] is False
        body = {"messages": HELLO, "max_tokens": 8, "temperature": 0}  # no model named: the default
        ans = httpx.post(srv.url + "/v1/chat/completions", json=body, timeout=120).json()
        assert ans["choices"][0]["message"]["content"] == \
            RemoteProvider(upstream.url + "/v1", "tiny").chat(HELLO, **GREEDY).text
        assert srv.state.registry.get_loaded("tiny").scheduling == "remote"


def test_a_remote_model_does_not_count_as_a_loaded_one(bundled, tiny_root, upstream):
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", max_loaded_models=1,
                      remote_models={"up": f"openai+{upstream.url}/v1#tiny"})
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        for model in ("tiny", "up", "tiny"):
            assert RemoteProvider(srv.url + "/v1", model).prompt("Hi", **GREEDY)
        assert {s.name for s in srv.state.registry.loaded()} == {"tiny", "up"}  # no pipeline to unload for it


def test_bad_specs_and_unknown_models(bundled, tiny_root, upstream):
    with pytest.raises(ValueError, match="openai\\+http://HOST:PORT/v1#MODEL"):
        ServeConfig(remote_models={"x": "http://127.0.0.1:1/v1#m"}).check()
    with pytest.raises(ValueError, match="name"):
        ServeConfig(remote_models={" x": f"openai+{upstream.url}/v1#tiny"}).check()
    cfg = ServeConfig(default_model=tiny_root / "tiny",
                      remote_models={"nope": f"openai+{upstream.url}/v1#no-such-model",
                                     "gone": f"openai+http://127.0.0.1:{free_port()}/v1#m"})
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        body = {"model": "nope", "messages": HELLO, "max_tokens": 4}
        r = httpx.post(srv.url + "/v1/chat/completions", json=body, timeout=60)
        assert r.status_code == 404 and "no-such-model" in r.text
        r = httpx.post(srv.url + "/v1/chat/completions", json=dict(body, model="gone"), timeout=60)
        assert r.status_code == 502 and "cannot reach" in r.text and r.json()["error"]["code"] == "upstream_error"
        assert srv.state.registry.get_loaded("gone") is None  # nothing half-made is kept


def test_cli_remote_flags():
    from ovgenai_c.cli import CliError, _remote_models

    assert _remote_models(["a=openai+http://h:1/v1#m", "b = openai+http://h:2/v1"]) == \
        {"a": "openai+http://h:1/v1#m", "b": "openai+http://h:2/v1"}
    for bad in (["openai+http://h:1/v1#m"], ["a=x", "a=y"], ["=openai+http://h:1/v1#m"]):
        with pytest.raises(CliError):
            _remote_models(bad)
