"""Provider facade over the ABI double: capabilities, device order, prompt/chat/stream/astream, cancel, refusals,
tool definitions and tool-call parsing."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from ovgenai_c import ChatHistory
from ovgenai_c.provider import (CapabilityNotSupportedError, ChatResult, Provider, SessionPool, model_info,
                                parse_tool_calls)
from ovgenai_c.provider.pool import _default_factory
from provider_helpers import CHATML, CHATML_THINK, CHATML_TOOLS, make_ir
from testsupport import run_threads

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tiny"
CANCEL = 2  # ov_genai_streaming_status_e: RUNNING=0, STOP=1, CANCEL=2


class Spy:
    """Wraps the real pipeline (over the double) and records what the provider passes to it."""

    def __init__(self, pipe, log):
        self._pipe, self._log = pipe, log
        self.device = pipe.device

    def generate(self, inputs, **kw):
        self._log.append(("generate", inputs, kw))
        return self._pipe.generate(inputs, **kw)

    def stream(self, inputs, **kw):
        self._log.append(("stream", inputs, kw))
        return self._pipe.stream(inputs, **kw)

    def astream(self, inputs, **kw):
        self._log.append(("astream", inputs, kw))
        return self._pipe.astream(inputs, **kw)

    def close(self):
        self._pipe.close()


@pytest.fixture
def spy_pool():
    log = []
    pool = SessionPool(factory=lambda *a: Spy(_default_factory(*a), log))
    pool.log = log
    yield pool
    pool.close(timeout=10)


# --- capabilities ---------------------------------------------------------------------------------------
def test_capabilities_of_a_plain_chat_template(model, ctl, pool):
    caps = Provider(model, library=ctl.library, pool=pool).capabilities
    assert (caps.chat, caps.prompt, caps.stream, caps.embed, caps.think, caps.tools) == \
        (True, True, True, False, False, False)
    assert caps.context_length is None and caps.max_output_tokens is None
    assert caps.to_dict()["embed"] is False
    assert caps.vision is False and caps.to_dict()["vision"] is False  # text models on LLMPipeline only


def test_capabilities_follow_the_template_and_the_profile(tmp_path, ctl, pool):
    tools = Provider(make_ir(tmp_path / "t", CHATML_TOOLS), library=ctl.library, pool=pool).capabilities
    assert tools.tools and tools.tool_call_format == "hermes" and not tools.think
    think = Provider(make_ir(tmp_path / "k", CHATML_THINK), library=ctl.library, pool=pool).capabilities
    assert think.think and not think.tools
    none = Provider(make_ir(tmp_path / "n", None), library=ctl.library, pool=pool)
    assert not none.capabilities.chat and none.capabilities.prompt
    with pytest.raises(CapabilityNotSupportedError, match="no chat template"):
        none.chat([{"role": "user", "content": "hi"}])
    assert none.prompt("hi") == "Echo: hi"  # a plain prompt still works
    prof = Provider(make_ir(tmp_path / "p", CHATML, profile={
        "context_length": 4096, "max_output_tokens": 100, "capabilities": {"stream": False, "think": True}}),
        library=ctl.library, pool=pool).capabilities
    assert prof.context_length == 4096 and prof.max_output_tokens == 100 and prof.think and not prof.stream


def test_real_model_files_give_template_and_context_length():
    info = model_info(FIXTURES / "tiny.gguf")
    assert info.format == "gguf" and info.context_length == 2048 and "<|im_start|>" in info.chat_template
    ir = model_info(FIXTURES / "ir")
    assert ir.format == "ir" and ir.chat_template == info.chat_template


def test_not_a_model(tmp_path, ctl, pool):
    (tmp_path / "empty").mkdir()
    from ovgenai_c.errors import ModelNotFoundError

    with pytest.raises(ModelNotFoundError, match="neither an OpenVINO IR model folder"):
        Provider(tmp_path / "empty", library=ctl.library, pool=pool)
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        Provider(tmp_path / "nope", library=ctl.library, pool=pool)


# --- device order ---------------------------------------------------------------------------------------
def test_device_order(tmp_path, ctl, pool, monkeypatch):
    plain = make_ir(tmp_path / "plain")
    prof = make_ir(tmp_path / "prof", profile={"device": "GPU.1"})
    assert Provider(plain, library=ctl.library, pool=pool).device == "CPU"
    assert Provider(prof, library=ctl.library, pool=pool).device == "GPU.1"
    monkeypatch.setenv("OVGENAI_DEVICE", "NPU")
    assert Provider(prof, library=ctl.library, pool=pool).device == "NPU"
    assert Provider(plain, library=ctl.library, pool=pool).device == "NPU"
    assert Provider(prof, library=ctl.library, pool=pool, device="CPU").device == "CPU"  # explicit wins
    monkeypatch.delenv("OVGENAI_DEVICE")
    p = Provider(prof, library=ctl.library, pool=pool)
    with p.lease() as lease:  # the pipeline really is created on that device
        assert lease.pipeline.device == "GPU.1"


# --- requests -------------------------------------------------------------------------------------------
def test_prompt_chat_and_usage(model, ctl, spy_pool):
    p = Provider(model, library=ctl.library, pool=spy_pool)
    assert p.prompt("hello world") == "Echo: hello world"
    assert spy_pool.log[-1][1] == "hello world"
    assert p.prompt("q", system="be brief") == "Echo: q"
    hist = spy_pool.log[-1][1]
    assert isinstance(hist, ChatHistory) and hist.get_messages() == [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "q"}]
    r = p.chat([{"role": "user", "content": "a"}, {"role": "assistant", "content": "Echo: a"},
                {"role": "user", "content": "b c"}])
    assert isinstance(r, ChatResult)
    assert r.message == {"role": "assistant", "content": "Echo: b c"} and r.finish_reason == "stop"
    assert r.usage["completion_tokens"] == 3 and r.usage["prompt_tokens"] > 0
    assert r.usage["total_tokens"] == r.usage["prompt_tokens"] + r.usage["completion_tokens"]
    assert r.perf.get_ttft().mean > 0 and "ttft" in r.to_dict()["perf"]
    assert spy_pool.stats["created"] == 1


def test_stream_yields_chunks_and_result(model, ctl, pool):
    p = Provider(model, library=ctl.library, pool=pool)
    s = p.stream([{"role": "user", "content": "x y z"}])
    chunks = list(s)
    assert chunks == ["Echo: ", "x ", "y ", "z"]
    assert s.result.text == "Echo: x y z" and s.result.finish_reason == "stop"
    assert pool.sessions()[0]["refs"] == 0  # the lease came back


def test_stream_close_cancels_natively(model, ctl, pool):
    ctl.delay(200_000)
    p = Provider(model, library=ctl.library, pool=pool)
    words = " ".join(f"w{i}" for i in range(50))  # ~10 s if not cancelled
    before = int(ctl.ctl.ovd_callback_count())
    with p.stream(words) as s:
        first = next(s)
        assert first == "Echo: "
        assert pool.sessions()[0]["refs"] == 1
    assert int(ctl.ctl.ovd_last_callback_status()) == CANCEL
    assert int(ctl.ctl.ovd_callback_count()) - before < 25  # cancelled, not run to the end (51 tokens)
    assert pool.sessions()[0]["refs"] == 0
    ctl.delay(0)
    assert p.prompt("again") == "Echo: again"  # the session survives a cancel


def test_astream_and_task_cancel(model, ctl, pool):
    p = Provider(model, library=ctl.library, pool=pool)

    async def collect():
        return [c async for c in p.astream([{"role": "user", "content": "p q"}])]

    assert asyncio.run(collect()) == ["Echo: ", "p ", "q"]

    async def cancel_midway():
        ctl.delay(200_000)
        got = []

        async def consume():
            async for c in p.astream(" ".join(f"w{i}" for i in range(50))):
                got.append(c)

        task = asyncio.create_task(consume())
        while not got:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return got

    before = int(ctl.ctl.ovd_callback_count())
    got = asyncio.run(cancel_midway())
    assert got[0] == "Echo: " and len(got) < 10
    assert int(ctl.ctl.ovd_last_callback_status()) == CANCEL
    assert int(ctl.ctl.ovd_callback_count()) - before < 25  # cancelled, not run to the end (51 tokens)
    assert pool.sessions()[0]["refs"] == 0


# --- refusals -------------------------------------------------------------------------------------------
def test_embed_refused(model, ctl, pool):
    p = Provider(model, library=ctl.library, pool=pool)
    assert p.capabilities.embed is False
    with pytest.raises(CapabilityNotSupportedError, match="no embedding pipeline") as ei:
        p.embed(["text"])
    assert ei.value.capability == "embed"
    from ovgenai_c.errors import NotSupportedError

    assert isinstance(ei.value, NotSupportedError)


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "weather in a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def test_tools_refused_on_a_template_without_tools(model, ctl, spy_pool):
    p = Provider(model, library=ctl.library, pool=spy_pool)
    with pytest.raises(CapabilityNotSupportedError, match="does not support tools.*refusing") as ei:
        p.chat([{"role": "user", "content": "weather?"}], tools=TOOLS)
    assert ei.value.capability == "tools"
    with pytest.raises(CapabilityNotSupportedError, match="does not support tools"):
        p.stream("weather?", tools=TOOLS)
    assert spy_pool.log == []  # nothing reached the pipeline


def test_tools_passed_to_template_and_calls_parsed(tmp_path, ctl, spy_pool):
    p = Provider(make_ir(tmp_path / "t", CHATML_TOOLS), library=ctl.library, pool=spy_pool)
    ctl.reply('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
    r = p.chat([{"role": "user", "content": "weather in Paris?"}], tools=TOOLS)
    hist = spy_pool.log[-1][1]
    assert isinstance(hist, ChatHistory) and hist.get_tools() == TOOLS
    assert r.finish_reason == "tool_calls" and r.text == "Let me check."
    assert r.tool_calls == [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    ctl.reply("It is sunny.")
    r = p.chat([{"role": "user", "content": "weather?"}], tools=TOOLS)
    assert r.tool_calls == [] and r.text == "It is sunny." and r.finish_reason == "stop"
    ctl.reply('<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>')
    s = p.stream([{"role": "user", "content": "weather in Oslo?"}], tools=TOOLS)
    "".join(s)
    assert s.result.tool_calls[0]["function"]["arguments"] == {"city": "Oslo"}


def test_think_switch(tmp_path, ctl, spy_pool):
    p = Provider(make_ir(tmp_path / "k", CHATML_THINK), library=ctl.library, pool=spy_pool)
    p.chat([{"role": "user", "content": "hi"}], think=False)
    assert spy_pool.log[-1][1].get_extra_context() == {"enable_thinking": False}
    plain = Provider(make_ir(tmp_path / "plain"), library=ctl.library, pool=spy_pool)
    with pytest.raises(CapabilityNotSupportedError, match="thinking"):
        plain.chat([{"role": "user", "content": "hi"}], think=True)
    # as Ollama: only think=True needs the switch; False (like None) asks for nothing the template lacks
    for think in (False, None):
        plain.chat([{"role": "user", "content": "hi"}], think=think)
        assert spy_pool.log[-1][1].get_extra_context() == {}
        with plain.stream("hi", think=think) as s:
            "".join(s)
        assert spy_pool.log[-1][1] == "hi"  # a plain prompt still (no history made for it)


# --- tool-call formats ----------------------------------------------------------------------------------
def test_parse_hermes_multiple():
    text = ('<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>\n'
            '<tool_call>\n{"name": "b", "arguments": "{\\"y\\": 2}"}\n</tool_call>')
    rest, calls = parse_tool_calls(text, "hermes")
    assert rest == "" and [c["function"] for c in calls] == [{"name": "a", "arguments": {"x": 1}},
                                                             {"name": "b", "arguments": {"y": 2}}]


def test_parse_mistral_llama3_json():
    rest, calls = parse_tool_calls('[TOOL_CALLS] [{"name": "f", "arguments": {"q": "s"}}]')
    assert rest == "" and calls[0]["function"] == {"name": "f", "arguments": {"q": "s"}}
    rest, calls = parse_tool_calls('<|python_tag|>{"name": "g", "parameters": {"n": 3}}<|eom_id|>', "llama3")
    assert calls[0]["function"] == {"name": "g", "arguments": {"n": 3}}
    rest, calls = parse_tool_calls('```json\n{"name": "h", "arguments": {}}\n```', "json")
    assert calls[0]["function"]["name"] == "h"


def test_parse_unrecognised_is_left_as_text():
    for text in ("Paris is the capital.", "<tool_call>not json</tool_call>", '{"no_name": 1}',
                 "[TOOL_CALLS] nope"):
        assert parse_tool_calls(text) == (text, [])


def test_timeout_cancels(model, ctl, pool):
    from ovgenai_c.errors import GenerationTimeoutError

    ctl.delay(200_000)
    p = Provider(model, library=ctl.library, pool=pool)
    before = int(ctl.ctl.ovd_callback_count())
    with pytest.raises(GenerationTimeoutError):
        p.prompt(" ".join(f"w{i}" for i in range(50)), timeout=0.3)
    assert int(ctl.ctl.ovd_last_callback_status()) == CANCEL
    assert int(ctl.ctl.ovd_callback_count()) - before < 25  # cancelled, not run to the end (51 tokens)
    assert pool.sessions()[0]["refs"] == 0


@pytest.mark.parametrize("batched", [False, True], ids=["pooled", "continuous-batching"])
def test_the_bundled_backend_serves_a_gguf_file_like_its_ir_folder(bundled, batched):
    # The bundled backend loads a GGUF file itself (it used to be refused here, IR folders only): the provider
    # serves tiny.gguf with the answers of the IR folder GenAI made from it. (Greedy, f32, a short answer: the IR
    # holds the weights GenAI compressed to f16 when saving it, so a long answer may part from the GGUF's own --
    # openvino_genai's run of the GGUF parts from its IR the same way, after ~26 tokens.)
    from ovgenai_c.provider import ContextLengthExceededError, Profile
    from ovgenai_c.provider.batching import BatchedProvider, can_batch
    from testsupport import PRECISION_HINT

    pool = SessionPool()
    made = {name: Provider(FIXTURES / name, library=bundled, pool=pool, properties=dict(PRECISION_HINT))
            for name in ("tiny.gguf", "ir")}
    try:
        gguf, ir = made["tiny.gguf"], made["ir"]
        assert gguf.library_kind == "bundled" and gguf.info.format == "gguf" and can_batch(gguf)
        caps = gguf.capabilities
        assert caps.context_length == 2048  # the GGUF's llama.context_length (the IR folder records none)
        assert ir.capabilities.context_length is None
        assert (caps.chat, caps.prompt, caps.stream, caps.tools, caps.think) == \
            (ir.capabilities.chat, ir.capabilities.prompt, ir.capabilities.stream, ir.capabilities.tools,
             ir.capabilities.think) == (True, True, True, False, False)
        if batched:
            gguf, ir = made["tiny.gguf"], made["ir"] = BatchedProvider(gguf), BatchedProvider(ir)
        hello = [{"role": "user", "content": "Hello"}]
        want = ir.chat(hello, num_predict=8, temperature=0)
        got = gguf.chat(hello, num_predict=8, temperature=0)
        assert got.text and got.text == want.text and got.finish_reason == want.finish_reason == "length"
        assert got.usage == want.usage == {"prompt_tokens": 52, "completion_tokens": 8, "total_tokens": 60}
        assert "".join(gguf.stream(hello, num_predict=8, temperature=0)) == want.text
        question = "What is the capital of France?"
        assert gguf.prompt(question, num_predict=8, temperature=0) == ir.prompt(question, num_predict=8,
                                                                                temperature=0)
        # the window is enforced with the tokenizer the GGUF carries (the pipeline writes it out as IR)
        small = Provider(FIXTURES / "tiny.gguf", library=bundled, pool=pool, properties=dict(PRECISION_HINT),
                         profile=Profile(context_length=60))
        small = made["small"] = BatchedProvider(small) if batched else small
        capped = small.chat(hello, num_predict=1000, temperature=0)
        assert capped.usage["completion_tokens"] == 60 - 52 and capped.text == want.text
        with pytest.raises(ContextLengthExceededError, match="maximum context length is 60 tokens"):
            small.chat([{"role": "user", "content": "hello " * 20}], num_predict=3)
    finally:
        for p in made.values():
            if isinstance(p, BatchedProvider):
                p.close()
        assert pool.close(timeout=30)


def test_forgotten_stream_cancels_and_gives_the_session_back(model, ctl, pool):
    import gc

    from testsupport import settle_garbage

    ctl.delay(200_000)
    p = Provider(model, library=ctl.library, pool=pool)
    before = int(ctl.ctl.ovd_callback_count())
    s = p.stream(" ".join(f"w{i}" for i in range(50)))
    assert next(s) == "Echo: "
    del s
    gc.collect()
    settle_garbage()  # (PyPy: the stream, then the lease it kept, at later collections)
    deadline = time.monotonic() + 3
    while pool.sessions()[0]["refs"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pool.sessions()[0]["refs"] == 0
    ctl.delay(0)
    assert p.prompt("next") == "Echo: next"
    # the old job (51 tokens, ~10 s) was cancelled, not left running on the owner thread before this prompt
    assert int(ctl.ctl.ovd_callback_count()) - before < 25


def test_thinking_is_split_from_the_answer(tmp_path, ctl, pool):
    p = Provider(make_ir(tmp_path / "k", CHATML_THINK), library=ctl.library, pool=pool)
    ctl.reply("<think>\nThe user greets me.\n</think>\n\nHello!")
    r = p.chat([{"role": "user", "content": "hi"}])
    assert r.message == {"role": "assistant", "content": "Hello!", "thinking": "The user greets me."}
    plain = Provider(make_ir(tmp_path / "plain"), library=ctl.library, pool=pool)
    r = plain.chat([{"role": "user", "content": "hi"}])
    assert r.text == "<think>\nThe user greets me.\n</think>\n\nHello!" and "thinking" not in r.message


def test_library_given_as_a_path(model, ctl, pool):
    p = Provider(model, library=str(ctl.path), pool=pool)
    assert p.library_kind == "other" and p.prompt("by path") == "Echo: by path"


def test_concurrent_requests_share_one_session(model, ctl, pool):
    p = Provider(model, library=ctl.library, pool=pool)
    results = {}

    def worker(i):
        for j in range(5):
            results[(i, j)] = p.chat([{"role": "user", "content": f"t{i} n{j}"}]).text

    errors = run_threads(worker, 4, timeout=30)
    assert not errors
    assert results == {(i, j): f"Echo: t{i} n{j}" for i in range(4) for j in range(5)}
    assert pool.stats["created"] == 1 and pool.stats["reused"] == 19
    assert int(ctl.ctl.ovd_concurrent_violations()) == 0
