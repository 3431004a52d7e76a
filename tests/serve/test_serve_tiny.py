"""The server over the tiny fixture model and the bundled backend: both APIs, their error shapes, limits,
disconnect-cancel and concurrent clients. Answers are compared with the provider's own greedy answers."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import pytest

from ovgenai_c.provider import Provider, SessionPool
from ovgenai_c.serve import ServeConfig, create_app
from serve_helpers import ServerThread, wait_until
from testsupport import kept_native_objects, transient_native_objects

TINY_IR = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "ir"
TINY_GGUF = TINY_IR.parent / "tiny.gguf"

HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture(scope="module")
def server(bundled, tiny_root):
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", max_queue=8,
                      max_body_bytes=64 * 1024)
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=120) as c:
        yield c


@pytest.fixture(scope="module")
def reference(bundled, tiny_root):
    pool = SessionPool()
    yield Provider(tiny_root / "tiny", library=bundled, pool=pool)
    pool.close(timeout=30)


def sse_events(lines):
    out = []
    for line in lines:
        if line.startswith("data: "):
            out.append(line[len("data: "):])
    return out


# --- listings ------------------------------------------------------------------------------------------
def test_model_listings(client):
    ids = [m["id"] for m in client.get("/v1/models").json()["data"]]
    assert ids == ["other/tiny", "tiny"]
    tags = client.get("/api/tags").json()["models"]
    assert [t["name"] for t in tags] == ["other/tiny", "tiny"] and all(t["size"] > 0 and t["digest"] for t in tags)
    assert client.get("/v1/models/tiny").json()["id"] == "tiny"
    assert client.get("/api/version").json()["version"]
    show = client.post("/api/show", json={"model": "tiny"}).json()
    assert show["capabilities"] == ["completion"] and "im_start" in show["template"]


def test_listings_show_gguf_files_and_leave_out_what_cannot_chat(bundled, tmp_path):
    # a GGUF file is served by the bundled backend too (it loads the file itself): listed by both APIs like an IR
    # folder; a Whisper folder is listed by /v1/models (its audio routes take it, as OpenAI lists its speech
    # models) but not by /api/tags (no Ollama route takes it), and /api/show does not claim "completion" for it
    import shutil

    from abi_double.controls import make_whisper_dir

    root = tmp_path / "models"
    shutil.copytree(TINY_IR, root / "tiny")
    shutil.copyfile(TINY_GGUF, root / "llama.gguf")
    make_whisper_dir(root / "whisper")
    cfg = ServeConfig(models_root=root, default_model=root / "tiny")
    with ServerThread(create_app(cfg, library=bundled)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        assert [m["id"] for m in c.get("/v1/models").json()["data"]] == ["llama.gguf", "tiny", "whisper"]
        assert c.get("/v1/models/llama.gguf").json()["id"] == "llama.gguf"
        tags = c.get("/api/tags").json()["models"]
        assert [t["name"] for t in tags] == ["llama.gguf", "tiny"]
        assert tags[0]["size"] == TINY_GGUF.stat().st_size and tags[0]["digest"]
        assert c.post("/api/show", json={"model": "tiny"}).json()["capabilities"] == ["completion"]
        show = c.post("/api/show", json={"model": "llama.gguf"}).json()
        assert show["capabilities"] == ["completion"] and "im_start" in show["template"]  # (the GGUF's own)
        assert c.post("/api/show", json={"model": "whisper"}).json()["capabilities"] == []
        assert srv.state.registry.loaded() == []  # listing loads nothing


@pytest.mark.parametrize("batching", [True, False], ids=["continuous-batching", "one-at-a-time"])
def test_a_gguf_file_is_served_with_its_ir_folders_answers(bundled, tmp_path, batching):
    # real requests to the GGUF file through both APIs: the text (and usage) of the IR folder GenAI made from it.
    # Both models run under the f32 precision hint (their profiles) and answer briefly: the IR holds the weights
    # GenAI compressed to f16 when it saved them, so long greedy answers part after ~26 tokens (GenAI's own do too)
    import shutil

    root = tmp_path / "models"
    shutil.copytree(TINY_IR, root / "tiny")
    shutil.copyfile(TINY_GGUF, root / "tiny.gguf")
    f32 = json.dumps({"properties": {"INFERENCE_PRECISION_HINT": "f32"}})
    (root / "tiny" / "ovgenai_c.profile.json").write_text(f32)
    (root / "tiny.ovgenai_c.profile.json").write_text(f32)  # a GGUF's profile: <name>.ovgenai_c.profile.json
    cfg = ServeConfig(models_root=root, default_model=root / "tiny", batching=batching)
    with ServerThread(create_app(cfg, library=bundled)) as srv, httpx.Client(base_url=srv.url, timeout=120) as c:
        def chat(model):
            r = c.post("/v1/chat/completions", json={"model": model, "messages": HELLO, "max_tokens": 8,
                                                      "temperature": 0})
            assert r.status_code == 200, r.text
            return r.json()

        want, got = chat("tiny"), chat("tiny.gguf")
        assert got["model"] == "tiny.gguf" and got["choices"][0]["message"]["content"]
        assert got["choices"] == want["choices"] and got["usage"] == want["usage"]
        assert got["usage"] == {"prompt_tokens": 52, "completion_tokens": 8, "total_tokens": 60}
        answers = [c.post("/api/generate", json={"model": model, "prompt": "What is the capital of France?",
                                                  "stream": False, "options": {"num_predict": 8,
                                                                               "temperature": 0}}).json()
                   for model in ("tiny", "tiny.gguf")]
        assert answers[1]["response"] and answers[1]["response"] == answers[0]["response"]
        assert answers[1]["eval_count"] == 8
        slot = srv.state.registry.get_loaded("tiny.gguf")
        assert slot.batched == batching and slot.providers[0].info.format == "gguf"
        assert slot.providers[0].capabilities.context_length == 2048  # from the GGUF's metadata


# --- OpenAI ----------------------------------------------------------------------------------------------
def test_openai_chat_matches_the_provider(client, reference):
    want = reference.chat(HELLO, num_predict=7, temperature=0)
    r = client.post("/v1/chat/completions", json={"model": "tiny", "messages": HELLO, "max_tokens": 7,
                                                  "temperature": 0})
    assert r.status_code == 200, r.text
    body = r.json()
    choice = body["choices"][0]
    assert body["object"] == "chat.completion" and body["model"] == "tiny"
    assert choice["message"] == {"role": "assistant", "content": want.text}
    assert choice["finish_reason"] == "length"
    assert body["usage"] == want.usage
    # max_completion_tokens wins over max_tokens, as in OpenAI's API
    r = client.post("/v1/chat/completions", json={"model": "tiny", "messages": HELLO, "max_tokens": 50,
                                                  "max_completion_tokens": 3, "temperature": 0})
    assert r.json()["usage"]["completion_tokens"] == 3


def test_openai_chat_stream(client, reference):
    want = reference.chat(HELLO, num_predict=6, temperature=0)
    with client.stream("POST", "/v1/chat/completions",
                       json={"model": "tiny", "messages": HELLO, "max_tokens": 6, "temperature": 0, "stream": True,
                             "stream_options": {"include_usage": True}}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r.iter_lines())
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == want.text
    finals = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert finals == ["length"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == want.usage
    assert len({c["id"] for c in chunks}) == 1


def test_openai_completions(client, reference):
    want = reference.prompt_result("Hello", num_predict=5, temperature=0)
    r = client.post("/v1/completions", json={"model": "tiny", "prompt": "Hello", "max_tokens": 5, "temperature": 0})
    body = r.json()
    assert body["object"] == "text_completion" and body["choices"][0]["text"] == want.text
    with client.stream("POST", "/v1/completions", json={"model": "tiny", "prompt": ["Hello"], "max_tokens": 5,
                                                        "temperature": 0, "stream": True}) as r:
        events = sse_events(r.iter_lines())
    assert events[-1] == "[DONE]"
    assert "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1]) == want.text


def test_stop_and_seed_reach_the_model(client, reference):
    full = reference.chat(HELLO, num_predict=8, temperature=0).text
    stop = full.split()[1] if len(full.split()) > 1 else full.split()[0]
    r = client.post("/v1/chat/completions", json={"model": "tiny", "messages": HELLO, "max_tokens": 8,
                                                  "temperature": 0, "stop": [stop]}).json()
    assert stop not in r["choices"][0]["message"]["content"] and r["choices"][0]["finish_reason"] == "stop"
    sampled = [client.post("/v1/chat/completions", json={"model": "tiny", "messages": HELLO, "max_tokens": 8,
                                                         "temperature": 1.0, "top_p": 0.9, "seed": 7}).json()
               for _ in range(2)]
    assert sampled[0]["choices"][0]["message"] == sampled[1]["choices"][0]["message"]  # same seed, same answer


def test_a_second_catalog_model(client):
    r = client.post("/v1/chat/completions", json={"model": "other/tiny", "messages": HELLO, "max_tokens": 2})
    assert r.status_code == 200 and r.json()["model"] == "other/tiny"


# --- Ollama ----------------------------------------------------------------------------------------------
def test_ollama_chat_streams_ndjson_by_default(client, reference):
    want = reference.chat(HELLO, num_predict=6, temperature=0)
    with client.stream("POST", "/api/chat", json={"model": "tiny", "messages": HELLO,
                                                  "options": {"num_predict": 6, "temperature": 0}}) as r:
        assert r.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(x) for x in r.iter_lines() if x]
    assert [x["done"] for x in lines] == [False] * (len(lines) - 1) + [True]
    assert "".join(x["message"]["content"] for x in lines) == want.text
    last = lines[-1]
    assert last["done_reason"] == "length" and last["eval_count"] == 6
    assert last["prompt_eval_count"] == want.usage["prompt_tokens"]
    assert last["total_duration"] >= last["eval_duration"] > 0


def test_ollama_chat_and_generate_without_streaming(client, reference):
    want = reference.chat(HELLO, num_predict=5, temperature=0)
    one = client.post("/api/chat", json={"model": "tiny:latest", "messages": HELLO, "stream": False,
                                         "options": {"num_predict": 5, "temperature": 0}}).json()
    assert one["message"] == {"role": "assistant", "content": want.text} and one["done"] is True
    want = reference.prompt_result("Hello", num_predict=4, temperature=0)
    gen = client.post("/api/generate", json={"model": "tiny", "prompt": "Hello", "stream": False,
                                             "options": {"num_predict": 4, "temperature": 0}}).json()
    assert gen["response"] == want.text and gen["eval_count"] == 4 and gen["done_reason"] == "length"
    loaded = client.post("/api/generate", json={"model": "tiny"}).json()
    assert loaded["done"] is True and loaded["done_reason"] == "load"


def test_ollama_ps_shows_the_loaded_model(client):
    client.post("/api/generate", json={"model": "tiny", "prompt": "Hi", "stream": False, "options": {"num_predict": 1}})
    ps = client.get("/api/ps").json()["models"]
    tiny = next(m for m in ps if m["name"] == "tiny")
    assert tiny["ovgenai_c"]["running"] == 0 and tiny["ovgenai_c"]["sessions"][0]["refs"] == 0


# --- errors --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path,body,status,param", [
    ("/v1/chat/completions", {"model": "nope", "messages": HELLO}, 404, "model"),
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "n": 2}, 400, "n"),
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "response_format": {"type": "json_object"}},
     400, "response_format"),
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "frobnicate": 1}, 400, "frobnicate"),
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "top_p": 0}, 400, "top_p"),
    # GenerationConfig's own rules, named as sent (the config's range; the config's size_t)
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "frequency_penalty": 3}, 400, "frequency_penalty"),
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "max_tokens": 2**64}, 400, "max_tokens"),
    ("/v1/completions", {"model": "tiny", "prompt": "x", "stop": ["a\u0000"]}, 400, "stop"),
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "logprobs": True}, 400, "logprobs"),
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO,
                              "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
     400, "tools"),
    ("/v1/chat/completions", {"model": "tiny", "messages": []}, 400, "messages"),
    ("/v1/completions", {"model": "tiny", "prompt": ["a", "b"]}, 400, "prompt"),
    ("/v1/chat/completions", {"model": "../etc", "messages": HELLO}, 404, "model"),
    # a non-boolean stream is refused (a string "false" would be truthy: it streamed)
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "stream": "false"}, 400, "stream"),
    ("/v1/completions", {"model": "tiny", "prompt": "x", "stream": 0}, 400, "stream"),
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "stream": True, "stream_options": "usage"},
     400, "stream_options"),
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "stream": True,
                              "stream_options": {"include_usage": "yes"}}, 400, "stream_options"),
    ("/v1/chat/completions", {"model": "tiny", "messages": HELLO, "stream": True,
                              "stream_options": {"include_usgae": True}}, 400, "stream_options"),
])
def test_openai_errors(client, path, body, status, param):
    r = client.post(path, json=body)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["param"] == param and err["message"]


@pytest.mark.parametrize("path,body,status,needle", [
    ("/api/chat", {"model": "nope", "messages": HELLO}, 404, "nope"),
    ("/api/chat", {"model": "tiny", "messages": HELLO, "options": {"mirostat": 1}}, 400, "mirostat"),
    ("/api/chat", {"model": "tiny", "messages": HELLO, "options": {"temprature": 0}}, 400, "temperature"),
    ("/api/chat", {"model": "tiny", "messages": HELLO, "options": {"min_p": 1}}, 400, "option 'min_p' must be in [0, 1)"),
    ("/api/chat", {"model": "tiny", "messages": HELLO, "format": "json"}, 400, "format"),
    ("/api/generate", {"model": "tiny", "prompt": "x", "raw": "yes"}, 400, "raw"),
    ("/api/generate", {"model": "tiny", "prompt": "x", "raw": True, "system": "s"}, 400, "raw"),
    ("/api/show", {"model": "nope"}, 404, "nope"),
    ("/api/chat", {"model": "tiny", "messages": HELLO, "stream": "false"}, 400, "'stream' must be true or false"),
    ("/api/generate", {"model": "tiny", "prompt": "x", "stream": "false"}, 400, "'stream' must be true or false"),
])
def test_ollama_errors(client, path, body, status, needle):
    r = client.post(path, json=body)
    assert r.status_code == status, r.text
    assert list(r.json()) == ["error"] and needle in r.json()["error"]


def test_ollama_think_false_on_a_model_without_a_thinking_switch(client):
    # Ollama needs the thinking capability only for "think": true
    for path, body in (("/api/chat", {"messages": HELLO}), ("/api/generate", {"prompt": "Hello"})):
        for think in (False, None):
            r = client.post(path, json={"model": "tiny", **body, "think": think, "stream": False,
                                        "options": {"num_predict": 2}})
            assert r.status_code == 200 and r.json()["done"] is True, r.text
        r = client.post(path, json={"model": "tiny", **body, "think": True, "stream": False})
        assert r.status_code == 400 and "thinking switch" in r.json()["error"]


def test_body_limits(client):
    big = {"model": "tiny", "messages": [{"role": "user", "content": "x" * (70 * 1024)}]}
    r = client.post("/v1/chat/completions", json=big)
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
    r = client.post("/api/chat", json=big)
    assert r.status_code == 413 and "--max-body-bytes" in r.json()["error"]

    def chunked():  # no Content-Length: the limit is counted while reading
        for _ in range(70):
            yield b"x" * 1024

    r = client.post("/v1/completions", content=chunked(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    r = client.post("/v1/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "JSON" in r.json()["error"]["message"]


@pytest.mark.parametrize("batching", [True, False], ids=["continuous-batching", "one-at-a-time"])
def test_the_context_window_bounds_prompt_and_answer(bundled, tiny_root, batching):
    # a profile gives the tiny model a 60-token context (the engine does not know it: no config.json, as an IR
    # converted from GGUF). "Hello" through the chat template is 52 tokens: asking for 1000 new tokens gets 8, and
    # a prompt that leaves no room for one new token is refused as OpenAI does (400 context_length_exceeded)
    model = tiny_root / "ctx60"
    import shutil

    if not model.exists():
        shutil.copytree(tiny_root / "tiny", model)
        (model / "ovgenai_c.profile.json").write_text('{"context_length": 60}')
    cfg = ServeConfig(models_root=tiny_root, default_model=model, batching=batching)
    long = [{"role": "user", "content": "hello " * 200}]
    with ServerThread(create_app(cfg, library=bundled)) as srv, httpx.Client(base_url=srv.url, timeout=120) as c:
        r = c.post("/v1/chat/completions", json={"messages": HELLO, "max_tokens": 1000, "temperature": 0}).json()
        assert r["model"] == "ctx60" and r["usage"] == {"prompt_tokens": 52, "completion_tokens": 8,
                                                        "total_tokens": 60}
        assert r["choices"][0]["finish_reason"] == "length"
        for stream in (False, True):
            r = c.post("/v1/chat/completions", json={"messages": long, "max_tokens": 3, "stream": stream})
            err = r.json()["error"]
            assert r.status_code == 400 and err["code"] == "context_length_exceeded" and err["param"] == "messages"
            assert err["type"] == "invalid_request_error"
            assert err["message"].startswith("This model's maximum context length is 60 tokens. However, your "
                                             "messages resulted in ")
        r = c.post("/v1/completions", json={"prompt": "hello " * 200, "max_tokens": 3})
        assert r.status_code == 400 and r.json()["error"]["param"] == "prompt"
        assert "your prompt resulted in" in r.json()["error"]["message"]
        for path, body in (("/api/chat", {"messages": long}), ("/api/generate", {"prompt": "hello " * 200})):
            for stream in (False, True):
                r = c.post(path, json={**body, "stream": stream, "options": {"num_predict": 3}})
                assert r.status_code == 400 and list(r.json()) == ["error"], r.text
                assert "maximum context length is 60 tokens" in r.json()["error"]
        slot = srv.state.registry.get_loaded("ctx60")
        assert slot.running == 0 and slot.batched == batching
        r = c.post("/api/generate", json={"prompt": "Hello", "stream": False, "options": {"temperature": 0}}).json()
        assert r["prompt_eval_count"] == 52 and r["eval_count"] == 8 and r["done_reason"] == "length"


# --- disconnect, concurrency -------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/chat"])
def test_client_disconnect_cancels_natively(server, client, bundled, reference, path):
    slot = server.state.registry.get_loaded("tiny") or None
    body = {"model": "tiny", "messages": HELLO, "stream": True}
    body.update({"max_tokens": 4000} if path.startswith("/v1") else {"options": {"num_predict": 4000}})
    before = None
    with httpx.Client(base_url=server.url, timeout=120) as own:
        with own.stream("POST", path, json=body) as r:
            slot = server.state.registry.get_loaded("tiny")
            before = (slot.stats.cancelled, slot.stats.completed)
            got = 0
            for line in r.iter_lines():
                if line.strip():
                    got += 1
                if got == 3:  # (the first SSE event is the role)
                    break
    wait_until(lambda: slot.stats.cancelled == before[0] + 1 and slot.running == 0, "the generation cancelled")
    assert slot.stats.completed == before[1]  # it did not run to its 4000 tokens
    # the session is back in its pool: a batching pipeline drops the cancelled request at its next step, on its
    # own thread, so its count of running requests follows the slot's release a moment later
    wait_until(lambda: all(s["refs"] == 0 for s in slot.sessions()), "the session back in its pool")
    if bundled.live_handles() is not None:  # nothing native is left but the pipelines and what they keep
        left = transient_native_objects(bundled, ("config", "results", "perf_metrics", "chat_history", "json_container"))
        assert not any(left.values()), left
        assert bundled.live_handles() == (bundled.live_handles("pipeline") + bundled.live_handles("batching_pipeline")
                                          + sum(kept_native_objects(bundled.path).values()))
    want = reference.chat(HELLO, num_predict=3, temperature=0).text
    r = client.post("/v1/chat/completions", json={"model": "tiny", "messages": HELLO, "max_tokens": 3,
                                                  "temperature": 0})
    assert r.json()["choices"][0]["message"]["content"] == want


@pytest.mark.parametrize("batching", [True, False], ids=["continuous-batching", "one-at-a-time"])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/chat"])
def test_a_non_streaming_client_that_leaves_is_a_quiet_cancel(bundled, tiny_root, caplog, batching, path):
    # the generation is cancelled because the client left: counted as cancelled, nothing logged as an error
    import logging
    import socket

    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", batching=batching)
    body = {"messages": HELLO, "stream": False}
    body.update({"max_tokens": 4000} if path.startswith("/v1") else {"options": {"num_predict": 4000}})
    data = json.dumps(body).encode()
    with caplog.at_level(logging.WARNING, logger="ovgenai_c.serve"), \
            ServerThread(create_app(cfg, library=bundled)) as srv:
        srv.state.registry.preload_default()
        slot = srv.state.registry.get_loaded("tiny")
        with socket.create_connection(("127.0.0.1", srv.port)) as s:
            s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(data), data))
            wait_until(lambda: slot.running == 1, "the generation started")
        wait_until(lambda: slot.stats.cancelled == 1 and slot.running == 0, "the generation cancelled")
        assert slot.stats.failed == 0 and slot.stats.completed == 0
        r = httpx.post(srv.url + "/v1/chat/completions", json={"messages": HELLO, "max_tokens": 2}, timeout=120)
        assert r.status_code == 200  # the model still serves
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_four_concurrent_clients(client, reference):
    # Prompt requests (each call independent on the pipeline); chat requests on one pooled pipeline may reuse the
    # KV cache of the previous conversation's common prefix, which on the PA path can change a greedy answer.
    prompts = ["Hello", "What is 2+2?", "Name a colour", "Tell me a story"]
    want = {p: reference.prompt_result(p, num_predict=12, temperature=0).text for p in prompts}
    got = {}
    errors = []
    start = threading.Barrier(len(prompts))

    def ask(p, stream):
        try:
            start.wait(60)
            with httpx.Client(base_url=client.base_url, timeout=300) as c:
                if stream:
                    with c.stream("POST", "/api/generate", json={"model": "tiny", "prompt": p,
                                                                 "options": {"num_predict": 12, "temperature": 0}}) as r:
                        got[p] = "".join(json.loads(x)["response"] for x in r.iter_lines() if x)
                else:
                    r = c.post("/v1/completions", json={"model": "tiny", "max_tokens": 12, "temperature": 0,
                                                        "prompt": p})
                    got[p] = r.json()["choices"][0]["text"]
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(p, i % 2 == 0)) for i, p in enumerate(prompts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors and got == want
