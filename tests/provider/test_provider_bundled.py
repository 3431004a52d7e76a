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
