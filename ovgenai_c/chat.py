"""ChatHistory: a list of message dicts (plus tools and extra context) that becomes a native
``ov_genai_chat_history`` (through JSON containers, by :mod:`ovgenai_c._capi.chat_history`) for each call that needs
one."""
from __future__ import annotations

import math
from typing import Any, Dict, Iterable, Iterator, List, Optional, Union, overload

from .errors import InvalidParameterError

Message = Dict[str, Any]


def _check_json_value(value: Any, where: str, depth: int = 0) -> None:
    """Reject what JSON (and the C side's UTF-8) cannot carry, naming where it is."""
    if depth > 200:
        raise InvalidParameterError(f"{where}: nesting deeper than 200 levels")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise InvalidParameterError(f"{where}: integer {value} does not fit 64 bits")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParameterError(f"{where}: {value} is not valid JSON")
        return
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidParameterError(f"{where}: text is not valid Unicode ({exc.reason} at {exc.start})") from None
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json_value(item, f"{where}[{i}]", depth + 1)
        return
    if isinstance(value, dict):
        for k, item in value.items():
            if not isinstance(k, str):
                raise InvalidParameterError(f"{where}: key {k!r} is not a str")
            _check_json_value(k, f"{where} key", depth + 1)
            _check_json_value(item, f"{where}[{k!r}]", depth + 1)
        return
    raise InvalidParameterError(f"{where}: {type(value).__name__} is not JSON-serialisable")


def check_message(message: Any, where: str = "message") -> Message:
    """Validate one chat message: a dict with a str ``role`` and ``content`` that is str (or a list of parts)."""
    if not isinstance(message, dict):
        raise InvalidParameterError(f"{where} must be a dict with 'role' and 'content', not {type(message).__name__}")
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise InvalidParameterError(f"{where} needs a non-empty str 'role', got {role!r}")
    if "content" in message:
        content = message["content"]
        if not (content is None or isinstance(content, (str, list))):
            raise InvalidParameterError(f"{where}['content'] must be a str, not {type(content).__name__}")
    elif "tool_calls" not in message:
        raise InvalidParameterError(f"{where} needs a 'content'")
    _check_json_value(message, where)
    return message


class ChatHistory:
    """Messages of a conversation, e.g. ``ChatHistory([{"role": "user", "content": "Hi"}])``."""

    def __init__(self, messages: Optional[Iterable[Message]] = None) -> None:
        self._messages: List[Message] = []
        self._tools: List[Any] = []
        self._extra_context: Dict[str, Any] = {}
        for m in messages or []:
            self.append(m)

    # list-like API (openvino_genai names first)
    def append(self, message: Message) -> None:
        self._messages.append(dict(check_message(message, f"message {len(self._messages)}")))

    push_back = append

    def pop_back(self) -> Message:
        if not self._messages:
            from .errors import EmptyError

            raise EmptyError("Cannot pop from an empty chat history")
        return self._messages.pop()

    pop = pop_back

    def get_messages(self) -> List[Message]:
        return [dict(m) for m in self._messages]

    @property
    def messages(self) -> List[Message]:
        return self.get_messages()

    def clear(self) -> None:
        self._messages.clear()

    def size(self) -> int:
        return len(self._messages)

    def empty(self) -> bool:
        return not self._messages

    def __len__(self) -> int:
        return len(self._messages)

    def __bool__(self) -> bool:  # as openvino_genai's: false when it holds no message
        return bool(self._messages)

    def set_messages(self, messages: Iterable[Message]) -> None:
        """Replace every message (each checked first: on a bad one nothing changes)."""
        if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Iterable):
            raise InvalidParameterError(f"messages must be a list of message dicts, not {type(messages).__name__}")
        checked = [dict(check_message(m, f"message {i}")) for i, m in enumerate(messages)]
        self._messages = checked

    def __iter__(self) -> Iterator[Message]:
        return iter(self.get_messages())

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> List[Message]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[Message, List[Message]]:
        """A copy of one message, or a list of copies for a slice."""
        if isinstance(index, slice):
            return [dict(m) for m in self._messages[index]]
        return dict(self._messages[index])

    def set_tools(self, tools: List[Any]) -> None:
        if not isinstance(tools, (list, tuple)):
            raise InvalidParameterError(f"tools must be a list of tool definitions, not {type(tools).__name__}")
        _check_json_value(list(tools), "tools")
        self._tools = list(tools)

    def get_tools(self) -> List[Any]:
        return list(self._tools)

    def set_extra_context(self, extra_context: Dict[str, Any]) -> None:
        if not isinstance(extra_context, dict):
            raise InvalidParameterError(f"extra_context must be a dict, not {type(extra_context).__name__}")
        _check_json_value(extra_context, "extra_context")
        self._extra_context = dict(extra_context)

    def get_extra_context(self) -> Dict[str, Any]:
        return dict(self._extra_context)

    def copy(self) -> "ChatHistory":
        """An independent copy: messages, tools and extra context (already checked, not checked again)."""
        new = ChatHistory()
        new._messages = [dict(m) for m in self._messages]
        new._tools = list(self._tools)
        new._extra_context = dict(self._extra_context)
        return new

    __copy__ = copy

    def __repr__(self) -> str:
        return f"ChatHistory({self._messages!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ChatHistory):
            return (self._messages, self._tools, self._extra_context) == \
                (other._messages, other._tools, other._extra_context)
        return NotImplemented


def as_chat_history(value: Union[ChatHistory, List[Message]]) -> ChatHistory:
    """A ChatHistory from a ChatHistory or a list of message dicts."""
    if isinstance(value, ChatHistory):
        return value
    if isinstance(value, list):
        return ChatHistory(value)
    raise InvalidParameterError(f"expected a ChatHistory or a list of message dicts, not {type(value).__name__}")
