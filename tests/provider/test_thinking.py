"""A thinking model's reasoning told apart from its answer (ovgenai_c.provider.thinking): the rule on whole answers,
the same rule on every chunking of them, and the provider and server using it (the ABI double answers the text)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ovgenai_c.provider import Provider
from ovgenai_c.provider.thinking import CONTENT, THINKING, ThinkingSplitter, opens_thinking, split_thinking
from provider_helpers import CHATML, CHATML_THINK, make_ir

TINY_IR = Path(__file__).resolve().parents[1] / "fixtures" / "tiny" / "ir"


@pytest.mark.parametrize("text, opened, want", [
    ("<think>\nThe user greets me.\n</think>\n\nHello!", False, ("The user greets me.", "Hello!")),
    ("  \n<think>a</think>b", False, ("a", "b")),
    ("<think>\n\n</think>\n\nHi", False, ("", "Hi")),
    ("plain answer", False, (None, "plain answer")),
    ("Sure <think>x</think>y", False, (None, "Sure <think>x</think>y")),  # not at the start: all answer, kept
    ("<think>cut off by the length limit", False, ("cut off by the length limit", "")),
    ("reasoning</think>\nanswer", True, ("reasoning", "answer")),
    ("\n  reasoning \n</think>", True, ("reasoning", "")),
    ("never closed", True, ("never closed", "")),
    ("<thi", False, (None, "<thi")),
    ("   ", False, (None, "   ")),
    ("<think>a</th", False, ("a</th", "")),
    ("<think>a</think>b</think>c", False, ("a", "b</think>c")),
])
def test_the_rule_on_whole_answers(text, opened, want):
    assert split_thinking(text, opened) == want


def test_every_chunking_gives_the_whole_answers_split():
    fragments = ["<think>", "</think>", "<th", "ink>", "</th", "<", "/", ">", " ", "\n", "  \n", "a", "b c", "é日",
                 "think", "x</think>y"]
    rng = random.Random(11)
    for case in range(3000):
        text = "".join(rng.choice(fragments) for _ in range(rng.randint(0, 10)))
        opened = case % 3 == 0
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 6))))
        chunks = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
        splitter = ThinkingSplitter(opened)
        pieces = [p for c in chunks for p in splitter.feed(c)] + splitter.finish()
        thinking, content = split_thinking(text, opened)
        assert "".join(t for k, t in pieces if k == THINKING) == (thinking or ""), (text, chunks)
        assert "".join(t for k, t in pieces if k == CONTENT) == content, (text, chunks)
        assert all(t for _, t in pieces), (text, chunks)  # no empty piece
        kinds = [k for k, _ in pieces]
        assert kinds == sorted(kinds, key=lambda k: k == CONTENT), (text, chunks)  # reasoning, then answer


def test_a_splitter_holds_back_only_what_may_change_meaning():
    s = ThinkingSplitter()
    assert s.feed("<thi") == []  # maybe the open tag
    assert s.feed("nk>\nStep one") == [(THINKING, "Step one")]
    assert s.feed(".\n") == [(THINKING, ".")]  # the newline may end the reasoning
    assert s.feed("Step two </th") == [(THINKING, "\nStep two")]
    assert s.feed("ink>\n\nThe answer") == [(CONTENT, "The answer")]
    assert s.feed(" is 4.\n") == [(CONTENT, " is 4.\n")]
    assert s.finish() == []
    plain = ThinkingSplitter()
    assert plain.feed("Hello") == [(CONTENT, "Hello")] and plain.feed(" <think>") == [(CONTENT, " <think>")]
    assert opens_thinking("<|im_start|>assistant\n<think>\n") and not opens_thinking("<think>\n\n</think>\n\n")


def _tiny_ir_whose_prompt_opens_thinking(folder: Path) -> Path:
    """The tiny fixture's IR with its chat template's generation prompt ending in ``<think>`` (a real tokenizer:
    the provider renders the prompt with it)."""
    import shutil

    shutil.copytree(TINY_IR, folder)
    xml = folder / "openvino_tokenizer.xml"
    old = "{{ '&lt;|im_start|>assistant&#10;' }}"
    text = xml.read_text(encoding="utf-8")
    assert old in text
    xml.write_text(text.replace(old, "{{ '&lt;|im_start|>assistant&#10;&lt;think>&#10;' }}"), encoding="utf-8")
    return folder


def test_the_provider_splits_answers_whose_prompt_opened_the_reasoning(tmp_path, pool):
    from testsupport import open_bundled_or_skip

    lib = open_bundled_or_skip()
    opened = Provider(_tiny_ir_whose_prompt_opens_thinking(tmp_path / "o"), library=lib, pool=pool,
                      properties={"INFERENCE_PRECISION_HINT": "f32"})
    assert opened.capabilities.think
    with opened.stream([{"role": "user", "content": "hi"}], num_predict=12) as s:
        text = "".join(s)
    assert s.thinking_opened is True and "</think>" not in text  # (the tiny model never closes it)
    assert s.result.message == {"role": "assistant", "content": "", "thinking": text.strip()}
    assert opened.chat([{"role": "user", "content": "hi"}], num_predict=12).message == s.result.message
    plain = Provider(TINY_IR, library=lib, pool=pool, properties={"INFERENCE_PRECISION_HINT": "f32"})
    with plain.stream([{"role": "user", "content": "hi"}], num_predict=12) as s:
        plain_text = "".join(s)
    assert s.thinking_opened is None and s.result.message == {"role": "assistant", "content": plain_text}


def _streamed(stream) -> dict:
    with stream as s:
        "".join(s)
    return s.result.message


def test_a_request_renders_its_prompt_once(tmp_path, pool, monkeypatch):
    """A thinking model whose context window is known: fitting the window and telling whether the prompt opens
    the reasoning share one render of the chat template (each of prompt, chat, stream, the batched provider)."""
    from ovgenai_c.provider import Profile
    from ovgenai_c.provider.batching import BatchedProvider
    from ovgenai_c.tokenizer import Tokenizer
    from testsupport import open_bundled_or_skip

    lib = open_bundled_or_skip()
    renders = []
    render = Tokenizer.apply_chat_template
    monkeypatch.setattr(Tokenizer, "apply_chat_template", lambda self, *a, **k: renders.append(1) or render(self, *a, **k))
    folder = _tiny_ir_whose_prompt_opens_thinking(tmp_path / "o")
    props = {"INFERENCE_PRECISION_HINT": "f32"}
    window = Profile(context_length=64)
    opened = Provider(folder, library=lib, pool=pool, properties=props, profile=window)
    hi = [{"role": "user", "content": "hi"}]
    for ask in (lambda: opened.chat(hi, num_predict=4).message,
                lambda: opened.prompt_result("hi", num_predict=4).message,
                lambda: _streamed(opened.stream(hi, num_predict=4))):
        renders.clear()
        message = ask()
        assert len(renders) == 1 and "thinking" in message
    # the window still caps the answer: a prompt of n tokens leaves 64 - n
    renders.clear()
    res = opened.chat(hi, num_predict=1000)
    assert len(renders) == 1 and res.usage["prompt_tokens"] + res.usage["completion_tokens"] <= 64
    batched = BatchedProvider(opened)
    try:
        renders.clear()
        assert "thinking" in _streamed(batched.stream(hi, num_predict=4)) and len(renders) == 1
    finally:
        batched.close()


def test_the_provider_splits_the_answer_of_a_closed_prompt(tmp_path, ctl, pool):
    closed = Provider(make_ir(tmp_path / "k", CHATML_THINK), library=ctl.library, pool=pool)
    ctl.reply("<think>\nThe user greets me.\n</think>\n\nHello!")
    with closed.stream([{"role": "user", "content": "hi"}]) as s:
        assert "".join(s) == "<think>\nThe user greets me.\n</think>\n\nHello!"
    # (the double's tokenizer files are stubs: the prompt cannot be rendered, so it counts as not opening)
    assert s.thinking_opened is False
    assert s.result.message == {"role": "assistant", "content": "Hello!", "thinking": "The user greets me."}


@pytest.fixture
def thinking_server(ctl, tmp_path):
    for module in ("starlette", "uvicorn", "httpx"):
        pytest.importorskip(module)
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
    from serve_helpers import ServerThread

    from ovgenai_c.provider import SessionPool
    from ovgenai_c.serve import ServeConfig, create_app

    model = make_ir(tmp_path / "models" / "thinker", CHATML_THINK)

    def factory(path: Path, index: int) -> Provider:
        return Provider(path, library=ctl.library, pool=SessionPool(ttl=None, max_resident=1))

    with ServerThread(create_app(ServeConfig(models_root=model.parent, default_model=model),
                                 provider_factory=factory)) as srv:
        yield srv


def test_the_server_gives_the_reasoning_apart_streamed_or_not(ctl, thinking_server):
    import httpx

    ctl.reply("<think>\nFirst I add.\nThen I check.\n</think>\n\nIt is 4.")
    url = thinking_server.url
    chat = {"model": "thinker", "messages": [{"role": "user", "content": "2+2?"}]}
    whole = httpx.post(url + "/v1/chat/completions", json=chat, timeout=60).json()["choices"][0]["message"]
    assert whole["reasoning_content"] == "First I add.\nThen I check." and whole["content"] == "It is 4."
    events = []
    with httpx.stream("POST", url + "/v1/chat/completions", json={**chat, "stream": True}, timeout=60) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                events.append(json.loads(line[6:])["choices"])
    deltas = [c[0]["delta"] for c in events if c]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == whole["reasoning_content"]
    assert "".join(d.get("content") or "" for d in deltas) == whole["content"]
    assert sum("reasoning_content" in d for d in deltas) > 1  # streamed as it came, not at the end
    text = httpx.post(url + "/v1/completions", json={"model": "thinker", "prompt": "2+2?", "stream": True},
                      timeout=60).text
    streamed = "".join(json.loads(line[6:])["choices"][0]["text"] for line in text.splitlines()
                       if line.startswith("data: {") and json.loads(line[6:])["choices"])
    assert streamed == "It is 4."  # a completion's text is the answer, streamed or not
    lines = [json.loads(x) for x in httpx.post(url + "/api/chat", json=chat, timeout=60).text.splitlines()]
    assert "".join(x["message"].get("thinking", "") for x in lines) == "First I add.\nThen I check."
    assert "".join(x["message"]["content"] for x in lines) == "It is 4."
    done = httpx.post(url + "/api/chat", json={**chat, "stream": False}, timeout=60).json()["message"]
    assert done["thinking"] == "First I add.\nThen I check." and done["content"] == "It is 4."


def test_the_batched_provider_splits_the_reasoning_too(tmp_path):
    """The server's engine on the bundled backend (continuous batching): its streams carry the same flag and its
    results the same split."""
    from testsupport import open_bundled_or_skip

    from ovgenai_c.provider.batching import BatchedProvider

    lib = open_bundled_or_skip()
    base = Provider(_tiny_ir_whose_prompt_opens_thinking(tmp_path / "o"), library=lib,
                    properties={"INFERENCE_PRECISION_HINT": "f32"})
    batched = BatchedProvider(base)
    try:
        s = batched.stream([{"role": "user", "content": "hi"}], num_predict=12)
        text = "".join(s)
        assert s.thinking_opened is True and text.strip()
        assert s.result.message == {"role": "assistant", "content": "", "thinking": text.strip()}
    finally:
        batched.close()


def test_openai_requests_set_the_thinking_switch(ctl, tmp_path):
    """OpenAI's ``reasoning_effort`` ("none": off, an effort: on) and vLLM's ``chat_template_kwargs.enable_thinking``
    reach the provider as its think switch; bad values and disagreements are 400 naming the field; "on" for a
    model without the switch is refused, as OpenAI refuses reasoning_effort there."""
    for module in ("starlette", "uvicorn", "httpx"):
        pytest.importorskip(module)
    import sys
    import threading

    import httpx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
    from serve_helpers import GatedProvider, ServerThread

    from ovgenai_c.provider import SessionPool
    from ovgenai_c.serve import ServeConfig, create_app

    gate = threading.Event()
    gate.set()
    made = []

    def fake(path: Path, index: int) -> GatedProvider:
        made.append(GatedProvider(gate))
        return made[-1]

    model = make_ir(tmp_path / "fake" / "m", CHATML_THINK)
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with ServerThread(create_app(ServeConfig(models_root=model.parent, default_model=model),
                                 provider_factory=fake)) as srv:
        for extra, want in (({}, None), ({"reasoning_effort": "none"}, False), ({"reasoning_effort": "high"}, True),
                            ({"reasoning_effort": "minimal"}, True),
                            ({"chat_template_kwargs": {"enable_thinking": False}}, False),
                            ({"reasoning_effort": "low", "chat_template_kwargs": {"enable_thinking": True}}, True)):
            r = httpx.post(srv.url + "/v1/chat/completions", json={**chat, **extra}, timeout=60)
            assert r.status_code == 200 and made[-1].started[-1]["think"] is want, (extra, r.text)
        for extra, param in (({"reasoning_effort": "max"}, "reasoning_effort"),
                             ({"chat_template_kwargs": {"foo": 1}}, "chat_template_kwargs"),
                             ({"chat_template_kwargs": {"enable_thinking": "no"}}, "chat_template_kwargs"),
                             ({"chat_template_kwargs": []}, "chat_template_kwargs"),
                             ({"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": True}},
                              "chat_template_kwargs")):
            r = httpx.post(srv.url + "/v1/chat/completions", json={**chat, **extra}, timeout=60)
            assert r.status_code == 400 and r.json()["error"]["param"] == param, (extra, r.text)
    plain = make_ir(tmp_path / "real" / "plain", CHATML)

    def real(path: Path, index: int) -> Provider:
        return Provider(path, library=ctl.library, pool=SessionPool(ttl=None, max_resident=1))

    with ServerThread(create_app(ServeConfig(models_root=plain.parent, default_model=plain),
                                 provider_factory=real)) as srv:
        body = {"model": "plain", "messages": [{"role": "user", "content": "hi"}]}
        r = httpx.post(srv.url + "/v1/chat/completions", json={**body, "reasoning_effort": "high"}, timeout=60)
        assert r.status_code == 400 and "thinking switch" in r.json()["error"]["message"], r.text
        r = httpx.post(srv.url + "/v1/chat/completions", json={**body, "reasoning_effort": "none"}, timeout=60)
        assert r.status_code == 200, r.text


def test_a_remote_endpoints_reasoning_is_kept_apart_and_passed_on(ctl, thinking_server):
    """RemoteProvider over an endpoint that streams the reasoning apart (here our own server; vLLM and others send
    the same ``reasoning_content`` deltas): the reasoning is the result's ``thinking`` and the stream's "thinking"
    pieces, never content; a server serving that endpoint's model as its own passes it on (OpenAI and Ollama)."""
    import httpx

    from ovgenai_c.provider import RemoteProvider
    from ovgenai_c.serve import ServeConfig, create_app
    from serve_helpers import ServerThread

    ctl.reply("<think>\nFirst I add.\nThen I check.\n</think>\n\nIt is 4.")
    want = {"role": "assistant", "content": "It is 4.", "thinking": "First I add.\nThen I check."}
    asks = [{"role": "user", "content": "2+2?"}]
    direct = RemoteProvider(thinking_server.url + "/v1", "thinker")
    assert direct.chat(asks).message == want
    with direct.stream(asks) as s:
        assert "".join(s) == "It is 4."  # iterating gives the answer alone
    assert s.result.message == want
    with direct.stream(asks) as s:
        got = list(s.pieces())
    assert len([p for p in got if p[0] == THINKING]) > 1  # as they came, not at the end
    assert "".join(t for k, t in got if k == THINKING) == want["thinking"]
    assert "".join(t for k, t in got if k == CONTENT) == want["content"] and s.result.message == want
    front = ServeConfig(remote_models={"up": f"openai+{thinking_server.url}/v1#thinker"})
    with ServerThread(create_app(front)) as srv:
        via = RemoteProvider(srv.url + "/v1", "up")
        assert via.chat(asks).message == want
        with via.stream(asks) as s:
            got = list(s.pieces())
        assert "".join(t for k, t in got if k == THINKING) == want["thinking"] and s.result.message == want
        body = {"model": "up", "messages": asks}
        ollama = httpx.post(srv.url + "/api/chat", json={**body, "stream": False}, timeout=60).json()["message"]
        assert ollama["thinking"] == want["thinking"] and ollama["content"] == want["content"]
        lines = []
        with httpx.stream("POST", srv.url + "/api/chat", json=body, timeout=60) as r:
            lines = [json.loads(line) for line in r.iter_lines() if line.strip()]
        assert "".join(o["message"].get("thinking", "") for o in lines) == want["thinking"]
        assert "".join(o["message"].get("content", "") for o in lines) == want["content"]


def test_the_command_lines_server_client_keeps_the_reasoning_apart(ctl, thinking_server):
    """`ovgenai-c generate/chat` through a running server: its client reads the streamed reasoning as "thinking"
    pieces (they were content with the tags before the server split them) and the answer as "content"."""
    from ovgenai_c.server_client import find_server

    ctl.reply("<think>\nFirst I add.\n</think>\n\nIt is 4.")
    server = find_server(thinking_server.url, named=True)
    for answer in (server.chat({"model": "thinker", "messages": [{"role": "user", "content": "2+2?"}]}),
                   server.generate({"model": "thinker", "prompt": "2+2?"})):
        pieces = list(answer.pieces())
        assert "".join(t for k, t in pieces if k == THINKING) == "First I add."
        assert "".join(t for k, t in pieces if k == CONTENT) == "It is 4." and answer.final["done"]
    assert "".join(server.chat({"model": "thinker", "messages": [{"role": "user", "content": "2+2?"}],
                                "think": True})) == "It is 4."  # (iterating gives the answer alone)
