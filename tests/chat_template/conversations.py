"""Conversations and extra contexts used to compare the native renderer with the jinja2 oracle."""
from __future__ import annotations

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a given city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "City name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number", "default": 0.5}},
                "required": ["a"],
            },
        },
    },
]

PLAIN = [{"role": "user", "content": "What is the capital of France?"}]

WITH_SYSTEM = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello!"},
]

MULTI_TURN = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello. How can I help?"},
    {"role": "user", "content": "Tell me a joke about \"quotes\" & <tags>\n  on two lines."},
    {"role": "assistant", "content": "No."},
    {"role": "user", "content": "Ünïcödé ✓ 日本語 🙂 please"},
]

TOOL_CALLS = [
    {"role": "system", "content": "You can call tools."},
    {"role": "user", "content": "What's the weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}},
            }
        ],
    },
    {"role": "tool", "name": "get_weather", "tool_call_id": "call_1", "content": "{\"temperature\": 22}"},
    {"role": "assistant", "content": "It is 22 degrees in Paris."},
    {"role": "user", "content": "Thanks!"},
]

THINKING = [
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "4", "reasoning_content": "Two plus two is four."},
    {"role": "user", "content": "And 3+3?"},
]

ASSISTANT_LAST = [
    {"role": "user", "content": "Say hi"},
    {"role": "assistant", "content": "Hi there!"},
]

# name -> (messages, tools, extra context)
CASES = {
    "plain": (PLAIN, None, {}),
    "system": (WITH_SYSTEM, None, {}),
    "multi_turn": (MULTI_TURN, None, {}),
    "assistant_last": (ASSISTANT_LAST, None, {}),
    "tools_only": (PLAIN, TOOLS, {}),
    "tool_calls": (TOOL_CALLS, TOOLS, {}),
    "thinking_on": (THINKING, None, {"enable_thinking": True}),
    "thinking_off": (THINKING, None, {"enable_thinking": False}),
}


def contexts():
    """Yields (case_id, context) pairs: every case with add_generation_prompt True and False."""
    for name, (messages, tools, extra) in CASES.items():
        for agp in (True, False):
            ctx = {
                "messages": messages,
                "add_generation_prompt": agp,
                "bos_token": "<s>",
                "eos_token": "</s>",
                "tools": tools,
            }
            ctx.update(extra)
            yield f"{name}-{'gen' if agp else 'nogen'}", ctx
