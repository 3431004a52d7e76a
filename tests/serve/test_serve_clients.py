"""End to end with the clients users have — the ``openai`` and ``ollama`` Python packages — against a server on
127.0.0.1 serving the real default model (SmolLM2-135M-Instruct IR) on the bundled backend. Greedy answers must
equal the provider's own answers for the same options."""
from __future__ import annotations

from pathlib import Path

import pytest

openai = pytest.importorskip("openai")
ollama = pytest.importorskip("ollama")

from ovgenai_c import models  # noqa: E402
from ovgenai_c.provider import Provider, SessionPool  # noqa: E402
from ovgenai_c.serve import ServeConfig, create_app  # noqa: E402
from serve_helpers import ServerThread  # noqa: E402

KEY = "test-key"
MESSAGES = [{"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def default_ir() -> Path:
    status = models.default_model_status()
    if not status["ir_present"]:
        pytest.skip("the default model's IR is not in the cache (run `ovgenai-c convert`)")
    return Path(status["ir_dir"])


@pytest.fixture(scope="module")
def server(bundled, default_ir):
    cfg = ServeConfig(models_root=default_ir.parent.parent, default_model=default_ir, api_key=KEY)
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        yield srv


@pytest.fixture(scope="module")
def name(server):
    return server.state.registry.default_name


@pytest.fixture(scope="module")
def reference(bundled, default_ir):
    pool = SessionPool()
    yield Provider(default_ir, library=bundled, pool=pool)
    pool.close(timeout=60)


def test_openai_client(server, name, reference):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
    assert name in [m.id for m in client.models.list().data]
    want = reference.chat(MESSAGES, temperature=0, num_predict=24)
    r = client.chat.completions.create(model=name, messages=MESSAGES, temperature=0, max_tokens=24)
    assert r.choices[0].message.content == want.text and want.text.strip()
    assert r.choices[0].finish_reason == want.finish_reason
    assert r.usage.completion_tokens == want.usage["completion_tokens"]
    assert r.usage.prompt_tokens == want.usage["prompt_tokens"]
    stream = client.chat.completions.create(model=name, messages=MESSAGES, temperature=0, max_tokens=24,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == want.text
    assert chunks[-1].usage.completion_tokens == want.usage["completion_tokens"]
    prompt = "The capital of France is"
    want_p = reference.prompt_result(prompt, temperature=0, num_predict=12)
    c = client.completions.create(model=name, prompt=prompt, temperature=0, max_tokens=12)
    assert c.choices[0].text == want_p.text


def test_openai_responses_api(server, name, reference):
    """client.responses (OpenAI's Responses API): the greedy answer, its usage and the length limit as the
    provider's own chat answer gives them, whole and streamed."""
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
    want = reference.chat(MESSAGES, temperature=0, num_predict=24)
    r = client.responses.create(model=name, instructions=MESSAGES[0]["content"], input=MESSAGES[1]["content"],
                                temperature=0, max_output_tokens=24)
    assert r.output_text == want.text and want.text.strip()
    assert r.usage.output_tokens == want.usage["completion_tokens"]
    assert r.usage.input_tokens == want.usage["prompt_tokens"]
    assert (r.status == "incomplete") == (want.finish_reason == "length")
    with client.responses.stream(model=name, input=MESSAGES, temperature=0, max_output_tokens=24) as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == final.output_text == want.text
    assert final.usage.output_tokens == want.usage["completion_tokens"]


def test_openai_client_errors(server, name, reference):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="no-such-model", messages=MESSAGES)
    with pytest.raises(openai.BadRequestError, match="n=2"):
        client.chat.completions.create(model=name, messages=MESSAGES, n=2)
    with pytest.raises(openai.BadRequestError, match="json_object"):
        client.chat.completions.create(model=name, messages=MESSAGES, response_format={"type": "json_object"})
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    if not reference.capabilities.tools:  # the template cannot take tools: refused, not ignored
        with pytest.raises(openai.BadRequestError, match="tools"):
            client.chat.completions.create(model=name, messages=MESSAGES, tools=tools)
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=server.url + "/v1", api_key="wrong", max_retries=0).models.list()


def test_ollama_client(server, name, reference):
    client = ollama.Client(host=server.url, headers={"Authorization": f"Bearer {KEY}"})
    assert name in [m.model for m in client.list().models]
    opts = {"temperature": 0, "num_predict": 24}
    want = reference.chat(MESSAGES, **opts)
    r = client.chat(model=name, messages=MESSAGES, options=opts)
    assert r.message.content == want.text and r.done and r.eval_count == want.usage["completion_tokens"]
    assert r.done_reason == ("length" if want.finish_reason == "length" else "stop")
    parts = list(client.chat(model=name, messages=MESSAGES, options=opts, stream=True))
    assert "".join(p.message.content for p in parts) == want.text and parts[-1].done
    prompt = "The capital of France is"
    want_p = reference.prompt_result(prompt, temperature=0, num_predict=12)
    g = client.generate(model=name, prompt=prompt, options={"temperature": 0, "num_predict": 12})
    assert g.response == want_p.text
    assert "".join(p.response for p in client.generate(model=name, prompt=prompt, stream=True,
                                                       options={"temperature": 0, "num_predict": 12})) == want_p.text
    assert "completion" in client.show(name).capabilities
    assert [m.model for m in client.ps().models] == [name]
    with pytest.raises(ollama.ResponseError) as exc:
        client.chat(model="no-such-model", messages=MESSAGES)
    assert exc.value.status_code == 404
    with pytest.raises(ollama.ResponseError) as exc:
        client.chat(model=name, messages=MESSAGES, options={"mirostat": 2})
    assert exc.value.status_code == 400 and "mirostat" in exc.value.error
