"""The provider over the real tiny fixture model and the bundled backend (skipped when it is not built)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ovgenai_c.provider import Provider, SessionPool

ROOT = Path(__file__).resolve().parents[2]
TINY_IR = ROOT / "tests" / "fixtures" / "tiny" / "ir"


def test_tiny_model_through_the_provider(bundled, monkeypatch):
    monkeypatch.delenv("OVGENAI_DEVICE", raising=False)
    pool = SessionPool()
    try:
        p = Provider(TINY_IR, library=bundled, pool=pool)
        caps = p.capabilities
        assert p.library_kind == "bundled" and caps.chat and not caps.embed and not caps.tools
        r = p.chat([{"role": "user", "content": "Hello"}], num_predict=4, temperature=0)
        assert r.usage["completion_tokens"] == 4 and r.finish_reason == "length" and r.text
        again = p.chat([{"role": "user", "content": "Hello"}], num_predict=4, temperature=0)
        assert again.text == r.text  # greedy is deterministic
        chunks = list(p.stream([{"role": "user", "content": "Hello"}], num_predict=4, temperature=0))
        assert "".join(chunks) == r.text
        full = p.chat([{"role": "user", "content": "Hello"}], num_predict=200, temperature=0).text
        s = p.stream([{"role": "user", "content": "Hello"}], num_predict=200, temperature=0)
        next(s)
        s.close()  # cancels natively (and waits for C): what was generated is a strict prefix of the full answer
        assert full.startswith(s.text) and len(s.text) < len(full)
        assert p.chat([{"role": "user", "content": "Hi"}], num_predict=2).text  # the session still works
        assert pool.stats["created"] == 1
    finally:
        assert pool.close(timeout=30)


def test_tiny_model_prompt(bundled, monkeypatch):
    monkeypatch.delenv("OVGENAI_DEVICE", raising=False)
    pool = SessionPool()
    try:
        p = Provider(TINY_IR, library=bundled, pool=pool)
        text = p.prompt("Hello", num_predict=3, temperature=0)
        assert text and text == p.prompt("Hello", num_predict=3, temperature=0)
    finally:
        assert pool.close(timeout=30)


# Regression: upstream's stateful path refuses a str prompt after a ChatHistory call; the binding ends
# that state outside start_chat(), so a pooled session can mix prompt() and chat().
def test_prompt_after_chat_on_one_session(bundled, monkeypatch):
    monkeypatch.delenv("OVGENAI_DEVICE", raising=False)
    pool = SessionPool()
    try:
        p = Provider(TINY_IR, library=bundled, pool=pool)
        p.chat([{"role": "user", "content": "Hello"}], num_predict=2)
        assert p.prompt("Hi", num_predict=2)
    finally:
        pool.close(timeout=30)


# The engine may not know the model's context window (an IR converted from GGUF has no config.json: the tiny
# fixture neither); the provider knows it from the profile, counts the templated prompt with the pipeline's own
# tokenizer, refuses a prompt that leaves no room for one new token and caps the new tokens at what is left.
CTX = 60  # "Hello" through the tiny model's chat template is 52 tokens


@pytest.mark.parametrize("batched", [False, True], ids=["one-at-a-time", "continuous-batching"])
def test_the_known_context_window_bounds_prompt_and_answer(bundled, monkeypatch, batched):
    from ovgenai_c.provider import ContextLengthExceededError, Profile
    from ovgenai_c.provider.batching import BatchedProvider

    monkeypatch.delenv("OVGENAI_DEVICE", raising=False)
    pool = SessionPool()
    p = Provider(TINY_IR, library=bundled, pool=pool, profile=Profile(context_length=CTX))
    if batched:
        p = BatchedProvider(p)
    try:
        hello = [{"role": "user", "content": "Hello"}]
        r = p.chat(hello, num_predict=1000, temperature=0)
        assert r.usage["prompt_tokens"] == 52 and r.usage["completion_tokens"] == CTX - 52, r.usage
        assert r.finish_reason == "length"
        with p.stream(hello, temperature=0) as s:  # no num_predict: the window's rest, not the whole window
            "".join(s)
        assert s.result.usage["completion_tokens"] == CTX - 52
        assert p.prompt_result("Hello", num_predict=3, temperature=0).usage["completion_tokens"] == 3
        long = [{"role": "user", "content": "hello " * 20}]
        for call in (lambda: p.chat(long, num_predict=3), lambda: p.stream(long, num_predict=3),
                     lambda: p.prompt_result("hello " * 20, num_predict=3)):
            with pytest.raises(ContextLengthExceededError) as ei:
                call()
            assert ei.value.context_length == CTX and ei.value.prompt_tokens > CTX
            assert f"maximum context length is {CTX} tokens" in str(ei.value)
            assert f"resulted in {ei.value.prompt_tokens} tokens" in str(ei.value)
        assert ei.value.what == "prompt"
        exactly = [{"role": "user", "content": "Hello" + "!" * (CTX - 52)}]  # one new token would not fit
        with pytest.raises(ContextLengthExceededError, match=f"resulted in (at least )?{CTX} tokens"):
            p.chat(exactly, num_predict=1)
        assert p.chat(hello, num_predict=2).usage["completion_tokens"] == 2  # still serving
    finally:
        p.close()
        assert pool.close(timeout=30)


def test_a_profile_names_a_draft_model(bundled, tmp_path, monkeypatch):
    # speculative decoding declared per model: the profile's draft_model (relative to the profile's folder, with
    # the draft's own profile properties) runs under the provider; the answers are the model's own (greedy, f32)
    import json
    import shutil

    from ovgenai_c.provider.batching import can_batch
    from ovgenai_c.provider.errors import ProfileError

    monkeypatch.delenv("OVGENAI_DEVICE", raising=False)
    f32 = {"properties": {"INFERENCE_PRECISION_HINT": "f32"}}
    main, draft = tmp_path / "main", tmp_path / "draft"
    shutil.copytree(TINY_IR, main)
    shutil.copytree(TINY_IR, draft)
    (draft / "ovgenai_c.profile.json").write_text(json.dumps(f32))
    pool = SessionPool()
    try:
        plain = Provider(main, library=bundled, pool=pool, properties=dict(f32["properties"]))
        want = plain.chat([{"role": "user", "content": "Hello"}], num_predict=12, temperature=0)
        (main / "ovgenai_c.profile.json").write_text(json.dumps({**f32, "draft_model": "../draft"}))
        p = Provider(main, library=bundled, pool=pool)
        assert repr(p.properties["draft_model"]) == f"DraftModel({str(draft)!r}, '', INFERENCE_PRECISION_HINT='f32')"
        assert not can_batch(p)  # (the server then runs it on LLMPipeline sessions)
        got = p.chat([{"role": "user", "content": "Hello"}], num_predict=12, temperature=0)
        assert got.text == want.text and got.usage == want.usage
        from ovgenai_c.provider.provider import perf_dict

        numbers = perf_dict(got.perf)
        assert numbers["accepted_draft_tokens"] == numbers["draft_tokens"] > 0  # its own copy drafts for it
        assert "".join(p.stream([{"role": "user", "content": "Hello"}], num_predict=12, temperature=0)) == want.text
        (main / "ovgenai_c.profile.json").write_text(json.dumps({"draft_model": "../missing"}))
        with pytest.raises(ProfileError, match=r"field 'draft_model': model path does not exist: .*missing"):
            Provider(main, library=bundled, pool=pool)
        (main / "ovgenai_c.profile.json").write_text(json.dumps({"draft_model": 7}))
        with pytest.raises(ProfileError, match="'draft_model' must be a string"):
            Provider(main, library=bundled, pool=pool)
    finally:
        assert pool.close(timeout=30)
