"""HTTP errors of the server, and the status each library error maps to (no third-party import)."""
from __future__ import annotations

import logging
from typing import Optional, Tuple

from .. import errors
from ..provider.errors import (CapabilityNotSupportedError, CatalogError, ContextLengthExceededError, OptionError,
                               RemoteError)

log = logging.getLogger("ovgenai_c.serve")


class HTTPError(Exception):
    """An error answer: HTTP ``status``, a message, and for OpenAI's shape ``param``, ``type``, ``code``."""

    def __init__(self, status: int, message: str, param: Optional[str] = None, code: Optional[str] = None,
                 type: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.type = type or _TYPES.get(status, "server_error")


_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "invalid_request_error",
          413: "invalid_request_error", 429: "rate_limit_error", 503: "server_error", 504: "timeout_error"}


def bad_request(message: str, param: Optional[str] = None, code: Optional[str] = None) -> HTTPError:
    return HTTPError(400, message, param, code)


class QueueFullError(HTTPError):
    def __init__(self, model: str, running: int, waiting: int) -> None:
        super().__init__(429, f"model {model!r} is busy: {running} request(s) running and {waiting} waiting, "
                              "the queue is full; retry later", code="queue_full")


class RequestTimeoutError(HTTPError):
    def __init__(self, timeout: float, where: str) -> None:
        super().__init__(504, f"the request exceeded the server's timeout of {timeout:g} s {where} and was "
                              "cancelled", code="timeout")


def to_http(exc: BaseException) -> HTTPError:
    """The HTTP error for any exception a request raised (500 for the unexpected, logged with its traceback)."""
    if isinstance(exc, HTTPError):
        return exc
    if isinstance(exc, CatalogError) or isinstance(exc, errors.ModelNotFoundError):
        return HTTPError(404, str(exc), "model", "model_not_found")
    if isinstance(exc, ContextLengthExceededError):  # OpenAI's code and message for it
        return HTTPError(400, str(exc), exc.what, "context_length_exceeded")
    if isinstance(exc, OptionError):
        return HTTPError(400, str(exc), exc.option, "invalid_option")
    if isinstance(exc, CapabilityNotSupportedError):
        return HTTPError(400, str(exc), exc.capability, "not_supported")
    if isinstance(exc, (errors.InvalidParameterError, errors.NotSupportedError, errors.ConfigError)):
        return HTTPError(400, str(exc), None, "invalid_request")
    if isinstance(exc, errors.GenerationTimeoutError):
        return HTTPError(504, str(exc), None, "timeout")
    # a remote model's endpoint (the server is then a gateway): busy → 503, unreachable or failing → 502
    if isinstance(exc, errors.RequestBusyError):
        return HTTPError(503, str(exc), None, "server_busy")
    if isinstance(exc, RemoteError):
        return HTTPError(502, str(exc), None, "upstream_error")
    log.error("internal error", exc_info=(type(exc), exc, exc.__traceback__))
    return HTTPError(500, f"internal error: {type(exc).__name__}: {exc}", None, "internal_error")


def openai_body(err: HTTPError) -> dict:
    return {"error": {"message": err.message, "type": err.type, "param": err.param, "code": err.code}}


def ollama_body(err: HTTPError) -> dict:
    return {"error": err.message}


def status_and_body(exc: BaseException, ollama: bool) -> Tuple[int, dict]:
    err = to_http(exc)
    return err.status, (ollama_body(err) if ollama else openai_body(err))
