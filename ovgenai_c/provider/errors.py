"""Errors of the provider layer (all derive from :class:`ovgenai_c.errors.GenAIError`)."""
from __future__ import annotations

import difflib
from typing import Iterable, Optional

from ..errors import ConfigError, GenAIError, InvalidParameterError, ModelNotFoundError, NotSupportedError


class ProfileError(ConfigError):
    """A model profile file that cannot be used; the message names the field and the file."""

    def __init__(self, message: str, path: Optional[str] = None, field: Optional[str] = None) -> None:
        super().__init__(message)
        self.path = path
        self.field = field


class OptionError(InvalidParameterError):
    """A generation option (Ollama-style name) that is unknown, unsupported or has a bad value."""

    def __init__(self, message: str, option: Optional[str] = None) -> None:
        super().__init__(message)
        self.option = option


class CapabilityNotSupportedError(NotSupportedError):
    """The model / library cannot do what was asked (embeddings, tools on a template without tools...)."""

    def __init__(self, message: str, capability: Optional[str] = None) -> None:
        super().__init__(message)
        self.capability = capability


class ContextLengthExceededError(InvalidParameterError):
    """The prompt (as the model sees it: after the chat template) leaves no room in the model's context window for
    one new token. ``prompt_tokens`` (as counted by the model's tokenizer, which may stop counting at its own
    length limit: then ``at_least``) and ``context_length`` are the two numbers; ``what`` is "messages" or
    "prompt" (what the caller sent)."""

    def __init__(self, prompt_tokens: int, context_length: int, what: str = "messages", at_least: bool = False) -> None:
        more = "at least " if at_least else ""
        super().__init__(f"This model's maximum context length is {context_length} tokens. However, your {what} "
                         f"resulted in {more}{prompt_tokens} tokens, which leaves no room for a new token. Please "
                         f"reduce the length of the {what}.")
        self.prompt_tokens = prompt_tokens
        self.context_length = context_length
        self.what = what


class CatalogError(ModelNotFoundError):
    """A model name that the catalog refuses (outside the models root) or cannot find."""


class PoolClosedError(GenAIError, RuntimeError):
    """The session pool is shut down."""


def closest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a likely typo, else an empty string."""
    hits = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {hits[0]!r}?)" if hits else ""


class RemoteError(GenAIError):
    """A remote (OpenAI-compatible) endpoint answered with an error the other types do not cover; ``http_status``
    is its HTTP status."""

    def __init__(self, message: str, http_status: Optional[int] = None) -> None:
        super().__init__(message)
        self.http_status = http_status


class RemoteAuthError(RemoteError, PermissionError):
    """The remote endpoint refused the API key (HTTP 401 / 403)."""


class RemoteUnavailableError(RemoteError, ConnectionError):
    """The remote endpoint cannot be reached (refused, unknown host, connection broken)."""
