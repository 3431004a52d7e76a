"""The server on the bundled backend batches a model's concurrent requests in one continuous-batching pipeline
(cdefs/93); ``batching=False`` (or the official library) keeps the pool of pipelines."""
from __future__ import annotations

import json
import threading

import httpx
import pytest

from ovgenai_c.provider import Provider, SessionPool
from ovgenai_c.provider.batching import BatchedProvider
from ovgenai_c.serve import ServeConfig, create_app
from serve_helpers import ServerThread

PROMPTS = ["Hello", "What is 2+2?", "Name a colour", "Tell me a story"]


@pytest.fixture(scope="module")
def reference(bundled, tiny_root):
    pool = SessionPool()
    yield Provider(tiny_root / "tiny", library=bundled, pool=pool)
    pool.close(timeout=30)


def ask_all(url, prompts, n):
    got, failures = {}, []
    start = threading.Barrier(len(prompts))

    def ask(p):
        try:
            start.wait(60)
            with httpx.Client(base_url=url, timeout=300) as c:
                with c.stream("POST", "/api/generate", json={"model": "tiny", "prompt": p,
                                                             "options": {"num_predict": n, "temperature": 0}}) as r:
                    got[p] = "".join(json.loads(x)["response"] for x in r.iter_lines() if x)
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=ask, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not failures
    return got


def test_concurrent_requests_share_one_batching_pipeline(bundled, tiny_root, reference, monkeypatch):
    """... and their tokens are awaited on the event loop (woken by the pipeline's steps), not fetched one by one
    in worker threads: a few thread hops per request, not one per token."""
    import anyio.to_thread

    hops = []
    run_sync = anyio.to_thread.run_sync

    async def counted(fn, *args, **kw):
        hops.append(getattr(fn, "__name__", repr(fn)))
        return await run_sync(fn, *args, **kw)

    want = {p: reference.prompt_result(p, num_predict=40, temperature=0).text for p in PROMPTS}
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", batch_size=4)
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
        got = ask_all(srv.url, PROMPTS, 40)
        monkeypatch.undo()
        slot = srv.state.registry.get_loaded("tiny")
        assert slot.batched and len(slot.distinct_providers()) == 1 and len(slot.providers) == 4
        metrics = slot.providers[0].pipeline().get_metrics()
        ps = httpx.get(srv.url + "/api/ps").json()["models"][0]["ovgenai_c"]
        (info,) = httpx.get(srv.url + "/ovgenai_c/info").json()["models"]
    assert got == want
    assert all(len(t) > 10 for t in got.values()), got  # long enough for a per-token hop to show
    assert len(hops) <= 2 * len(PROMPTS), hops
    assert info["scheduling"] == {"mode": "continuous_batching", "pipelines": 1, "batch_size": 4}
    assert metrics["shared_steps"] >= 1 and metrics["used_blocks"] == 0, metrics
    assert ps["batched"] is True and ps["pipelines"] == 1 and ps["concurrent"] == 4
    assert bundled.live_handles("batching_pipeline") == 0 and bundled.live_handles("generation_handle") == 0


def test_batching_off_keeps_the_pool(bundled, tiny_root, reference):
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", batching=False, parallel=2)
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        got = ask_all(srv.url, PROMPTS[:2], 8)
        slot = srv.state.registry.get_loaded("tiny")
        assert not slot.batched and len(slot.distinct_providers()) == 2
        assert not any(isinstance(p, BatchedProvider) for p in slot.providers)
    assert got == {p: reference.prompt_result(p, num_predict=8, temperature=0).text for p in PROMPTS[:2]}


@pytest.mark.parametrize("batching", [True, False])
def test_usage_counts_the_whole_prompt_on_a_continued_chat(bundled, tiny_root, batching):
    """Batched: nothing is reused, the count is whole. The pool on SDPA (as the command line runs it) reuses the
    previous turn's KV cache; usage still counts the whole prompt."""
    from ovgenai_c import Tokenizer

    tok = Tokenizer(str(tiny_root / "tiny"))
    turn1 = [{"role": "user", "content": "Hello there"}]
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", batching=batching)

    def sdpa(path, index):
        return Provider(path, library=bundled, properties={"ATTENTION_BACKEND": "SDPA"},
                        pool=SessionPool(ttl=None, max_resident=1))

    with ServerThread(create_app(cfg, provider_factory=sdpa, library=bundled)) as srv, \
            httpx.Client(base_url=srv.url, timeout=120) as c:
        r1 = c.post("/v1/chat/completions", json={"messages": turn1, "max_tokens": 5, "temperature": 0}).json()
        turn2 = turn1 + [r1["choices"][0]["message"], {"role": "user", "content": "And again"}]
        r2 = c.post("/v1/chat/completions", json={"messages": turn2, "max_tokens": 5, "temperature": 0}).json()
    for msgs, r in ((turn1, r1), (turn2, r2)):
        text = tok.apply_chat_template([{"role": m["role"], "content": m["content"]} for m in msgs],
                                       add_generation_prompt=True)
        assert r["usage"]["prompt_tokens"] == tok.encode(text, add_special_tokens=False).input_ids.shape[-1]


@pytest.mark.parametrize("batching", [True, False])
def test_ollama_raw_prompt_skips_the_template(bundled, tiny_root, batching):
    import ovgenai_c

    with ovgenai_c.LLMPipeline(tiny_root / "tiny", "CPU", library=bundled) as pipe:
        want = str(pipe.generate("The sky is", max_new_tokens=8, apply_chat_template=False))
        templated = str(pipe.generate("The sky is", max_new_tokens=8))
    assert want != templated  # the template matters for this prompt
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", batching=batching)
    with ServerThread(create_app(cfg, library=bundled)) as srv, httpx.Client(base_url=srv.url, timeout=120) as c:
        r = c.post("/api/generate", json={"model": "tiny", "prompt": "The sky is", "raw": True, "stream": False,
                                          "options": {"num_predict": 8, "temperature": 0}}).json()
    assert r["response"] == want


def test_a_request_arriving_while_another_runs_reuses_its_system_prompt(bundled, tiny_root, reference):
    """The batching engine's prefix sharing through the server: the second request's system prompt (the same as the
    running first one's) is taken from the first one's KV cache, not prefilled again (the pipeline's counters), and
    both answers equal the single-request ones."""
    system = ("You are a careful assistant who answers every question about the sea, ships and lighthouses with "
              "short, plain sentences and never invents facts or numbers.")
    msgs = [[{"role": "system", "content": system}, {"role": "user", "content": q}] for q in ("Hello", "Name a colour")]
    refs = [reference.chat(m, num_predict=12, temperature=0) for m in msgs]
    want = [r.text for r in refs]
    assert refs[0].usage["completion_tokens"] == 12  # no early end: the first request is still running below
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", batch_size=4)
    with ServerThread(create_app(cfg, library=bundled)) as srv:
        first: list = []
        body = {"model": "tiny", "messages": msgs[0], "stream": True, "options": {"num_predict": 200, "temperature": 0}}
        with httpx.Client(base_url=srv.url, timeout=300) as c:
            with c.stream("POST", "/api/chat", json=body) as r:
                lines = r.iter_lines()
                first.append(json.loads(next(lines))["message"]["content"])  # its prompt is computed: it runs
                second = c.post("/api/chat", json={"model": "tiny", "messages": msgs[1], "stream": False,
                                                   "options": {"num_predict": 12, "temperature": 0}}).json()
        m = srv.state.registry.get_loaded("tiny").providers[0].pipeline().get_metrics()  # a fresh pipeline's
    assert second["message"]["content"] == want[1]
    # the first chunk is the text produced before the stream was first read: under load it can run past the 12
    # tokens of the reference (the request asked for 200), so one must begin the other
    assert want[0].startswith(first[0]) or first[0].startswith(want[0]), (first[0], want[0])
    assert m["reused_tokens"] >= 16 and m["prompt_tokens"] > m["reused_tokens"], m


def test_ollama_eval_duration_of_a_short_batched_answer(bundled, tiny_root):
    # the first token's time is when the batch produced it, not when its text was first read (the text of a short
    # answer may come only with its end): eval_duration covers the decode steps after the first token
    cfg = ServeConfig(models_root=tiny_root, default_model=tiny_root / "tiny", batch_size=2)
    with ServerThread(create_app(cfg, library=bundled)) as srv, httpx.Client(base_url=srv.url, timeout=120) as c:
        shares = []
        for _ in range(3):
            r = c.post("/api/generate", json={"model": "tiny", "prompt": "Hi", "stream": False,
                                              "options": {"num_predict": 3, "temperature": 0}}).json()
            assert r["eval_count"] == 3 and r["prompt_eval_duration"] > 0, r
            shares.append(r["eval_duration"] / (r["prompt_eval_duration"] + r["eval_duration"]))
    assert max(shares) > 0.2, shares  # two decode steps of three tokens; it was ~0.03 (text-based)
