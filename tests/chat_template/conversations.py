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
                "id": "a1b2c3d4e",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}},
            }
        ],
    },
    {"role": "tool", "name": "get_weather", "tool_call_id": "a1b2c3d4e", "content": "{\"temperature\": 22}"},
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


COHERE_TOOLS = [
    {
        "name": "internet_search",
        "description": "Returns a list of relevant document snippets for a textual query retrieved from the internet",
        "parameter_definitions": {
            "query": {"description": "Query to search the internet with", "type": "str", "required": True},
            "max_results": {"description": "How many results", "type": "int", "required": False},
        },
    }
]

# Extra cases for templates that expect tools in another shape or extra variables.
SPECIAL_CASES = {
    "CohereForAI-c4ai-command-r-plus-tool_use": {
        "cohere_tools": (WITH_SYSTEM, COHERE_TOOLS, {}),
        "cohere_tools_multi": (MULTI_TURN, COHERE_TOOLS, {}),
    },
    "fireworks-ai-llama-3-firefunction-v2": {
        "functions": (WITH_SYSTEM, None, {"functions": __import__("json").dumps([t["function"] for t in TOOLS]),
                                          "datetime": "2024-07-26 10:00"}),
        "functions_multi": (MULTI_TURN, None, {"functions": "[]", "datetime": "2024-07-26 10:00"}),
    },
}


def contexts(template_name: str | None = None):
    """Yields (case_id, context) pairs: every case with add_generation_prompt True and False."""
    cases = dict(CASES)
    cases.update(SPECIAL_CASES.get(template_name, {}))
    for name, (messages, tools, extra) in cases.items():
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
