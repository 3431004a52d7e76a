"""OpenAI's Responses API (POST /v1/responses) through the ``openai`` client: a thinking model's reasoning item
and answer, whole and streamed as typed events; function tools and a conversation that carries their calls and
outputs back; the length limit as an incomplete response; refusals by name. Models are the ABI double's (its reply
is scripted); the real model's greedy answer is checked in test_serve_clients.py."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

openai = pytest.importorskip("openai")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "provider"))
from provider_helpers import CHATML_THINK, CHATML_TOOLS, make_ir  # noqa: E402

from ovgenai_c.provider import Provider, SessionPool  # noqa: E402
from ovgenai_c.serve import ServeConfig, create_app  # noqa: E402
from ovgenai_c.serve.responses_api import convert_input, convert_tools  # noqa: E402
from serve_helpers import ServerThread  # noqa: E402

REASONED = "<think>\nFirst I add.\nThen I check.\n</think>\n\nIt is 4."
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather of a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


@pytest.fixture
def client(double, tmp_path):
    root = tmp_path / "models"
    make_ir(root / "thinker", CHATML_THINK)
    make_ir(root / "tooler", CHATML_TOOLS)

    def factory(path: Path, index: int) -> Provider:
        return Provider(path, library=double.library, pool=SessionPool(ttl=None, max_resident=1))

    with ServerThread(create_app(ServeConfig(models_root=root, default_model=root / "thinker"),
                                 provider_factory=factory)) as srv:
        yield openai.OpenAI(base_url=srv.url + "/v1", api_key="none", max_retries=0)


def test_a_thinking_models_answer_whole_and_streamed(double, client):
    double.reply(REASONED)
    r = client.responses.create(model="thinker", input="2+2?", instructions="Be brief.")
    assert r.status == "completed" and r.output_text == "It is 4."
    assert [item.type for item in r.output] == ["reasoning", "message"]
    assert r.output[0].content[0].text == "First I add.\nThen I check."
    assert r.usage.output_tokens > 0 and r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    assert r.id.startswith("resp_") and r.store is False and r.instructions == "Be brief."

    with client.responses.stream(model="thinker", input=[{"role": "user", "content": "2+2?"}]) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    thought = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    assert text == "It is 4." and thought == "First I add.\nThen I check."
    assert kinds.count("response.reasoning_text.delta") > 1  # as it came, not at the end
    assert kinds.index("response.reasoning_text.done") < kinds.index("response.output_text.delta")
    assert final.output_text == "It is 4." and [i.type for i in final.output] == ["reasoning", "message"]
    assert final.usage.output_tokens == r.usage.output_tokens


def test_function_tools_and_their_outputs(double, client):
    double.reply(CALL)
    r = client.responses.create(model="tooler", input="Weather in Paris?", tools=TOOLS)
    calls = [item for item in r.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather" and json.loads(calls[0].arguments) == {"city": "Paris"}
    assert calls[0].call_id.startswith("call_") and not any(i.type == "message" for i in r.output)
    with client.responses.stream(model="tooler", input="Weather in Paris?", tools=TOOLS) as stream:
        events = list(stream)
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert len(done) == 1 and json.loads(done[0].arguments) == {"city": "Paris"}
    assert not any("<tool_call>" in getattr(e, "delta", "") for e in events)
    # the call and its output go back in the next request's input, as the client keeps them
    double.reply("It is sunny in Paris.")
    follow = [{"role": "user", "content": "Weather in Paris?"}, r.output[0].model_dump(),
              {"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny, 21 C"}]
    r2 = client.responses.create(model="tooler", input=follow, tools=TOOLS)
    assert r2.output_text == "It is sunny in Paris."


def test_the_length_limit_gives_an_incomplete_response(double, client):
    double.reply("one two three four five six seven eight nine ten")
    r = client.responses.create(model="thinker", input="Count", max_output_tokens=3)
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    with client.responses.stream(model="thinker", input="Count", max_output_tokens=3) as stream:
        kinds = [e.type for e in stream]
    assert kinds[-1] == "response.incomplete"


@pytest.mark.parametrize("extra, named", [
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"text": {"format": {"type": "json_schema", "name": "x", "schema": {}}}}, "json_schema"),
    ({"tools": [{"type": "web_search"}]}, "web_search"),
    ({"tool_choice": "required", "tools": TOOLS}, "tool_choice"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y.png"}]}]},
     "input_image"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"reasoning": {"effort": "extreme"}}, "reasoning.effort"),
    ({"top_logprobs": 3}, "top_logprobs"),
])
def test_what_cannot_be_honoured_is_refused_by_name(client, extra, named):
    body = {"model": "thinker", "input": "Hi", **extra}
    with pytest.raises(openai.BadRequestError, match=named.replace(".", r"\.")):
        client.responses.create(**body)


def test_unknown_fields_and_models_are_refused(client):
    with pytest.raises(openai.BadRequestError, match="frobnicate"):
        client.responses.create(model="thinker", input="Hi", extra_body={"frobnicate": 1})
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="no-such-model", input="Hi")


def test_input_items_become_the_chat_the_template_gets():
    body = {"instructions": "Be brief.", "input": [
        {"type": "message", "role": "developer", "content": "Use tools."},
        {"role": "user", "content": [{"type": "input_text", "text": "Weather "}, {"type": "input_text",
                                                                                 "text": "in Paris?"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call", "call_id": "c2", "name": "get_time", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "noon"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Sunny at noon."}]},
    ]}
    assert convert_input(body) == [
        {"role": "system", "content": "Be brief."}, {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}, "id": "c1"},
            {"type": "function", "function": {"name": "get_time", "arguments": {}}, "id": "c2"}]},
        {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
        {"role": "tool", "content": "noon", "tool_call_id": "c2"},
        {"role": "assistant", "content": "Sunny at noon."}]
    assert convert_tools({"tools": TOOLS}) == [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather of a city", "parameters": TOOLS[0]["parameters"]}}]
    assert convert_tools({"tools": TOOLS, "tool_choice": "none"}) is None
