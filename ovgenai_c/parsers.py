"""openvino_genai's parsers: what an answer holds besides its words — reasoning between tags, tool calls — as dicts.

Two kinds, as in GenAI 2026.4:

- :class:`Parser` runs once the text is complete. Put instances in ``GenerationConfig.parsers``; ``generate()``
  then returns one message dict per text in ``DecodedResults.parsed`` (``{"content": text}`` that each parser in
  turn reads and extends: ``reasoning_content``, ``tool_calls``...).
- :class:`IncrementalParser` runs on each streamed chunk, inside a :class:`~ovgenai_c.TextParserStreamer`: it gets
  the chunk's message dict to fill, the chunk's text and token ids, and returns the text that goes on to the next
  parser and into ``content``.

Parsers work on text alone, so they run in Python on whichever library generated it (the GenAI C API has no
parser functions; upstream runs them in its C++ wrapper around the same generate). The built-in ones give what
GenAI's give on the same text, quirks included (tests/binding/test_parsers.py compares both on thousands of
texts). Messages hold JSON values only: str keys; None, bool, int, float, str, list and dict values.
"""
from __future__ import annotations

import copy
import json
import math
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence

from . import errors
from ._streaming import StreamingStatus

Message = Dict[str, Any]

_JSON_TYPE_NAMES = ((type(None), "null"), (bool, "boolean"), (int, "number"), (float, "number"), (str, "string"),
                    (list, "array"), (tuple, "array"), (dict, "object"))


def json_type_name(value: Any) -> str:
    """The JSON name of a value's type ("string", "object"...), as GenAI's messages say it."""
    for cls, name in _JSON_TYPE_NAMES:
        if isinstance(value, cls):
            return name
    return type(value).__name__


def check_message(message: Any, what: str = "the message") -> Message:
    """``message`` if it is a dict of JSON values (str keys all the way down), else a TypeError naming the first
    value that is not (a message is GenAI's JsonContainer: it cannot hold a set, bytes or an object)."""
    if not isinstance(message, dict):
        raise TypeError(f"{what} must be a dict, not {type(message).__name__}")
    stack: List[Any] = [(message, what)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise TypeError(f"{path} has a key {k!r} that is not a str: a message holds JSON values only")
                stack.append((v, f"{path}[{k!r}]"))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))
        elif value is not None and not isinstance(value, (bool, int, float, str)):
            raise TypeError(f"{path} is a {type(value).__name__}: a message holds JSON values only (None, bool, int, "
                            "float, str, list, dict)")
    return message


def concatenate(target: Message, delta: Message, path: str = "") -> None:
    """Add ``delta`` to ``target`` as GenAI accumulates a streamed message: a new key is copied in, strings under the
    same key are joined, dicts merged key by key; any other pair under one key is an error naming it."""
    for key, value in delta.items():
        if key not in target:
            target[key] = copy.deepcopy(value)
            continue
        old = target[key]
        if isinstance(value, dict) and isinstance(old, dict):
            concatenate(old, value, f"{path}{key}/")
        elif isinstance(value, str) and isinstance(old, str):
            target[key] = old + value
        else:
            raise errors.InvalidParameterError(
                f"cannot add the streamed message's {path}{key!r} ({json_type_name(value)}) to the accumulated one "
                f"({json_type_name(old)}): only strings are joined and objects merged")


def _content(message: Any, parser: object) -> str:
    if not isinstance(message, dict):
        raise TypeError(f"{type(parser).__name__}.parse takes a message dict, not {type(message).__name__}")
    content = message.get("content")
    if not isinstance(content, str):
        found = "has no 'content'" if "content" not in message else \
            f"has a 'content' that is a {json_type_name(content)}"
        raise errors.InvalidParameterError(f"{type(parser).__name__}: the message {found}; it needs the text to "
                                           "parse as a string under 'content'")
    return content


# --- parsers of the complete text --------------------------------------------------------------------------------

class Parser:
    """Base class of the parsers that run once the text is complete: subclass it and implement ``parse``."""

    def parse(self, message: Message) -> None:
        """Read ``message["content"]`` and add what it holds to ``message`` (in place)."""
        raise NotImplementedError(f"{type(self).__name__}.parse must be implemented (Parser.parse is abstract)")


class ReasoningParser(Parser):
    """The reasoning between ``open_tag`` and ``close_tag`` goes to ``reasoning_content`` ("" when there is none).

    ``expect_open_tag=False``: the model's prompt already opened the tag (DeepSeek-R1), so everything before the
    close tag — or the whole text when it has none — is reasoning. ``keep_original_content=False`` also takes the
    reasoning and its tags out of ``content``.
    """

    def __init__(self, expect_open_tag: bool = True, keep_original_content: bool = True, open_tag: str = "<think>",
                 close_tag: str = "</think>") -> None:
        self.expect_open_tag, self.keep_original_content, self.open_tag, self.close_tag = \
            _reasoning_settings(type(self).__name__, expect_open_tag, keep_original_content, open_tag, close_tag)

    def parse(self, message: Message) -> None:
        content = _content(message, self)
        reasoning = ""
        close = content.find(self.close_tag)
        if self.expect_open_tag:
            start = content.find(self.open_tag)
            if start != -1 and close != -1 and close > start:
                reasoning = content[start + len(self.open_tag):close]
                if not self.keep_original_content:
                    message["content"] = content[:start] + content[close + len(self.close_tag):]
        elif close != -1:
            reasoning = content[:close]
            if not self.keep_original_content:
                message["content"] = content[close + len(self.close_tag):]
        else:
            reasoning = content
            if not self.keep_original_content:
                message["content"] = ""
        message["reasoning_content"] = reasoning

    def __repr__(self) -> str:
        return _reasoning_repr(self)


class DeepSeekR1ReasoningParser(ReasoningParser):
    """:class:`ReasoningParser` for DeepSeek-R1's answers: the prompt opens ``<think>``, the answer closes it."""

    def __init__(self) -> None:
        super().__init__(expect_open_tag=False)


class Phi4ReasoningParser(ReasoningParser):
    """:class:`ReasoningParser` for Phi-4 reasoning models: the answer opens and closes ``<think>``."""

    def __init__(self) -> None:
        super().__init__(expect_open_tag=True)


# GenAI's patterns are ECMAScript std::regex over UTF-8 bytes: "." stops at \n and \r, \w and \s are ASCII classes
_PYTHONIC_CALL = re.compile(r"\[([^\n\r]*?)\]")
_PYTHONIC_ARG = re.compile(r'(\w+)\s*=\s*"([^"]*)"', re.ASCII)


class Llama3PythonicToolParser(Parser):
    """The first ``[name(key="value", ...)]`` in the text becomes ``tool_calls`` (a list of one
    ``{"arguments": {...}, "name": ...}``); ``content`` is kept. As GenAI's, arguments are read only in the
    ``key="value"`` form: other values are left out."""

    def parse(self, message: Message) -> None:
        found = _PYTHONIC_CALL.search(_content(message, self))
        if found is None:
            return
        call = found.group(1)
        paren = call.find("(")
        if paren == -1:  # GenAI's arithmetic with npos: the name is the whole call, the arguments all but its end
            name, args = call, call[:-1]
        else:
            name, args = call[:paren], call[paren + 1:len(call) - 1]
        arguments = {m.group(1): m.group(2) for m in _PYTHONIC_ARG.finditer(args)}
        message["tool_calls"] = [{"arguments": arguments, "name": name}]


class Llama3JsonToolParser(Parser):
    """The JSON object from the text's first ``{`` to its last ``}`` becomes ``tool_calls`` (a list of that one
    object); ``content`` is kept. Text that is not valid JSON there raises :class:`~ovgenai_c.errors.InvalidJSONError`
    (GenAI raises too), text with no ``{ ... }`` is left alone."""

    def parse(self, message: Message) -> None:
        content = _content(message, self)
        start, end = content.find("{"), content.rfind("}")
        if start == -1 or end == -1 or end <= start:
            return
        message["tool_calls"] = [parse_json(content[start:end + 1], f"{type(self).__name__}: the tool call")]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number overflow parsing {text!r}")
    return value


def _json_int(text: str) -> Any:
    value = int(text)
    # GenAI's JSON holds 64-bit integers (signed, or unsigned above 2**63 - 1); a longer one is read as a float
    return value if -(2 ** 63) <= value < 2 ** 64 else _json_float(text)


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def parse_json(text: str, what: str = "the text") -> Any:
    """``text`` as strict JSON, as GenAI reads it (no NaN or Infinity, no number beyond a double, no unpaired UTF-16
    surrogate); anything else raises :class:`~ovgenai_c.errors.InvalidJSONError` naming ``what`` and why."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_json_float, parse_int=_json_int)
    except (ValueError, RecursionError) as exc:
        raise errors.InvalidJSONError(f"{what} is not valid JSON: {exc}") from None
    if _has_lone_surrogate(value):
        raise errors.InvalidJSONError(f"{what} is not valid JSON: it has an unpaired UTF-16 surrogate escape")
    return value


class VLLMParserWrapper(Parser):
    """A vLLM tool or reasoning parser object used as a :class:`Parser`: its ``extract_tool_calls(content, None)``
    (a pydantic result, read through ``model_dump_json()`` or ``json()``) and ``extract_reasoning(content, None)``
    (a ``(reasoning, content)`` tuple, given as ``reasoning`` and ``content``) make the new message, which replaces
    the old one's keys."""

    def __init__(self, py_parser: Any) -> None:
        self._steps = []
        if hasattr(py_parser, "extract_tool_calls"):
            self._steps.append(self._tool_calls)
        if hasattr(py_parser, "extract_reasoning"):
            self._steps.append(self._reasoning)
        if not self._steps:
            raise errors.InvalidParameterError("the vLLM parser has neither of the supported parsing methods: "
                                               "'extract_tool_calls' or 'extract_reasoning'")
        self.py_parser = py_parser

    def _tool_calls(self, content: str) -> Message:
        parsed = self.py_parser.extract_tool_calls(content, None)
        for method in ("model_dump_json", "json"):  # (json() is the older pydantic's)
            if hasattr(parsed, method):
                value = parse_json(getattr(parsed, method)(), f"{type(self.py_parser).__name__}'s tool calls")
                if not isinstance(value, dict):
                    raise errors.InvalidParameterError(f"{type(self.py_parser).__name__}.extract_tool_calls gave JSON "
                                                       f"that is a {json_type_name(value)}, not an object")
                return value
        raise errors.InvalidParameterError(f"{type(self.py_parser).__name__}.extract_tool_calls returned a "
                                           f"{type(parsed).__name__}, which has no model_dump_json() or json() method")

    def _reasoning(self, content: str) -> Message:
        parsed = self.py_parser.extract_reasoning(content, None)
        if not (isinstance(parsed, tuple) and len(parsed) == 2 and all(isinstance(x, str) for x in parsed)):
            raise errors.InvalidParameterError(f"{type(self.py_parser).__name__}.extract_reasoning must return a "
                                               f"tuple of two str (reasoning, content), not {parsed!r:.80}")
        return {"reasoning": parsed[0], "content": parsed[1]}

    def parse(self, message: Message) -> None:
        content = _content(message, self)
        new: Message = {}
        for step in self._steps:
            concatenate(new, step(content))
        message.clear()
        message.update(new)


# --- parsers of the streamed text --------------------------------------------------------------------------------

class IncrementalParser:
    """Base class of the parsers that run on each streamed chunk (in a :class:`~ovgenai_c.TextParserStreamer`):
    subclass it and implement ``parse`` and ``reset``. A parser may end the generation by setting its status to
    ``StreamingStatus.STOP`` or ``CANCEL`` (``set_status``), which outranks what the streamer's ``write`` says."""

    _status = StreamingStatus.RUNNING  # (a class default: a subclass whose __init__ skips super()'s still has one)

    def __init__(self) -> None:
        self._status = StreamingStatus.RUNNING

    def parse(self, delta_message: Message, delta_text: str, delta_tokens: Optional[List[int]] = None) -> str:
        """Add what the chunk ``delta_text`` (its token ids ``delta_tokens``) holds to ``delta_message`` and return
        the text that goes on to the next parser and into ``content``."""
        raise NotImplementedError(f"{type(self).__name__}.parse must be implemented (IncrementalParser.parse is "
                                  "abstract)")

    def reset(self) -> None:
        """Forget the state of the previous generation (called before each one)."""
        raise NotImplementedError(f"{type(self).__name__}.reset must be implemented (IncrementalParser.reset is "
                                  "abstract)")

    def get_status(self) -> StreamingStatus:
        return self._status

    def set_status(self, status: StreamingStatus) -> None:
        if not isinstance(status, StreamingStatus):
            raise TypeError(f"status must be a StreamingStatus, not {type(status).__name__}")
        self._status = status


class ReasoningIncrementalParser(IncrementalParser):
    """:class:`ReasoningParser` for streamed text: each chunk's reasoning goes to the chunk message's
    ``reasoning_content`` (a :class:`~ovgenai_c.TextParserStreamer` joins them). Text that may be the start of a tag
    is held back until the next chunk tells; after the close tag the parser passes text through unchanged. With
    ``keep_original_content=False`` the reasoning and its tags are left out of ``content``.

    As GenAI's: with ``expect_open_tag=True`` all text before the open tag is held back, so an answer that never
    opens it streams no content; a close tag that starts in the chunk that opens the reasoning and ends in the next
    one is not recognised (the rest of the answer then counts as reasoning)."""

    def __init__(self, expect_open_tag: bool = True, keep_original_content: bool = True, open_tag: str = "<think>",
                 close_tag: str = "</think>") -> None:
        super().__init__()
        self.expect_open_tag, self.keep_original_content, self.open_tag, self.close_tag = \
            _reasoning_settings(type(self).__name__, expect_open_tag, keep_original_content, open_tag, close_tag)
        self.reset()

    def reset(self) -> None:
        self._first_chunk = True
        self._inside = False  # between the tags
        self._held = ""  # text that may be the start of a tag
        self._done = False  # past the close tag: text passes through

    def _close_tag_prefix(self, text: str) -> int:
        """How many characters at the end of ``text`` are the start of the close tag (the longest such)."""
        tag = self.close_tag
        for n in range(min(len(text), len(tag)), 0, -1):
            if text.endswith(tag[:n]):
                return n
        return 0

    def parse(self, delta_message: Message, delta_text: str, delta_tokens: Optional[List[int]] = None) -> str:
        if not isinstance(delta_text, str):
            raise TypeError(f"delta_text must be a str, not {type(delta_text).__name__}")
        if self._done:
            return delta_text
        if self._first_chunk and not self.expect_open_tag:
            self._inside = True
        self._first_chunk = False
        chunk = self._held + delta_text
        open_at, close_at = chunk.find(self.open_tag), chunk.find(self.close_tag)
        keep = self.keep_original_content
        if not self._inside and open_at != -1 and self.expect_open_tag:
            after_open = open_at + len(self.open_tag)
            if close_at != -1 and close_at > open_at:  # both tags in this chunk
                rest = chunk[close_at + len(self.close_tag):]
                delta_message["reasoning_content"] = chunk[after_open:close_at]
                delta_message["content"] = rest
                self._held, self._done = "", True
                # (GenAI's quirk: with the original content kept, the chunk's own text goes on as it came)
                return delta_text if keep else rest
            delta_message["reasoning_content"] = chunk[after_open:]
            self._held, self._inside = "", True
            return chunk if keep else ""
        if self._inside and close_at != -1:
            rest = chunk[close_at + len(self.close_tag):]
            delta_message["reasoning_content"] = chunk[:close_at]
            delta_message["content"] = rest
            self._held, self._inside, self._done = "", False, True
            return chunk if keep else rest
        if self._inside:
            held = self._close_tag_prefix(chunk)
            self._held = chunk[len(chunk) - held:] if held else ""
            delta_message["reasoning_content"] = chunk[:len(chunk) - held]
            return chunk[:len(chunk) - held] if keep else ""
        # the open tag is not (yet) in sight: hold the text until a chunk shows whether it starts one
        self._held += delta_text
        return ""

    def __repr__(self) -> str:
        return _reasoning_repr(self)


class DeepSeekR1ReasoningIncrementalParser(ReasoningIncrementalParser):
    """:class:`ReasoningIncrementalParser` for DeepSeek-R1: the prompt opens ``<think>``, the answer closes it."""

    def __init__(self) -> None:
        super().__init__(expect_open_tag=False)


class Phi4ReasoningIncrementalParser(ReasoningIncrementalParser):
    """:class:`ReasoningIncrementalParser` for Phi-4 reasoning models: the answer opens and closes ``<think>``."""

    def __init__(self) -> None:
        super().__init__(expect_open_tag=True)


def _reasoning_settings(owner: str, expect_open_tag: Any, keep_original_content: Any, open_tag: Any,
                        close_tag: Any) -> tuple:
    for name, value in (("expect_open_tag", expect_open_tag), ("keep_original_content", keep_original_content)):
        if not isinstance(value, bool):
            raise TypeError(f"{owner}: {name} must be a bool, not {type(value).__name__}")
    for name, value in (("open_tag", open_tag), ("close_tag", close_tag)):
        if not isinstance(value, str):
            raise TypeError(f"{owner}: {name} must be a str, not {type(value).__name__}")
    return expect_open_tag, keep_original_content, open_tag, close_tag


def _reasoning_repr(parser: Any) -> str:
    return (f"{type(parser).__name__}(expect_open_tag={parser.expect_open_tag}, "
            f"keep_original_content={parser.keep_original_content}, open_tag={parser.open_tag!r}, "
            f"close_tag={parser.close_tag!r})")


# --- what a pipeline does with them --------------------------------------------------------------------------------

def check_parsers(parsers: Any) -> tuple:
    """``GenerationConfig.parsers`` as a tuple of :class:`Parser` (a TypeError names the first entry that is not one:
    an IncrementalParser belongs in a TextParserStreamer)."""
    if parsers is None:
        return ()
    if isinstance(parsers, (Parser, IncrementalParser, str, bytes, dict)) or not isinstance(parsers, Iterable):
        raise TypeError(f"GenerationConfig.parsers must be a list of Parser objects, not {type(parsers).__name__}")
    out = tuple(parsers)
    for i, p in enumerate(out):
        if not isinstance(p, Parser):
            hint = (": an IncrementalParser parses streamed chunks — give it to a TextParserStreamer"
                    if isinstance(p, IncrementalParser) else "")
            raise TypeError(f"GenerationConfig.parsers[{i}] is a {type(p).__name__}, not a Parser{hint}")
    return out


def parse_texts(texts: Sequence[str], parsers: Sequence[Parser], streamed: Optional[Message] = None) -> List[Message]:
    """``DecodedResults.parsed`` as GenAI makes it: the streamed message (a TextParserStreamer's) as the first, then
    one message per text — ``{"content": text}`` unless the streamed one has content already — that each parser
    reads and extends in turn."""
    parsed: List[Message] = [] if streamed is None else [streamed]
    if not parsers:
        return parsed
    parsed = parsed[:len(texts)] + [{} for _ in range(len(texts) - len(parsed))]
    for message, text in zip(parsed, texts):
        if "content" not in message:
            message["content"] = text
        for parser in parsers:
            parser.parse(message)
            check_message(message, f"the message after {type(parser).__name__}.parse")
    return parsed


__all__ = ["Parser", "ReasoningParser", "DeepSeekR1ReasoningParser", "Phi4ReasoningParser", "Llama3PythonicToolParser",
           "Llama3JsonToolParser", "VLLMParserWrapper", "IncrementalParser", "ReasoningIncrementalParser",
           "DeepSeekR1ReasoningIncrementalParser", "Phi4ReasoningIncrementalParser"]
