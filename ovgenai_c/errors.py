"""Status codes → typed exceptions. One checker (:func:`check`) for every C call.

Every exception derives from :class:`GenAIError`, which is a ``RuntimeError`` as every error of
``openvino_genai``'s pybind module is (so ``except RuntimeError`` in ported code keeps working), and, where one
fits, from the matching builtin too, so ``except FileNotFoundError`` or ``except ValueError`` work as a Python
user expects.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Type

# ov_status_e
OV_STATUS_NAMES: Dict[int, str] = {
    0: "OK",
    -1: "GENERAL_ERROR",
    -2: "NOT_IMPLEMENTED",
    -3: "NETWORK_NOT_LOADED",
    -4: "PARAMETER_MISMATCH",
    -5: "NOT_FOUND",
    -6: "OUT_OF_BOUNDS",
    -7: "UNEXPECTED",
    -8: "REQUEST_BUSY",
    -9: "RESULT_NOT_READY",
    -10: "NOT_ALLOCATED",
    -11: "INFER_NOT_STARTED",
    -12: "NETWORK_NOT_READ",
    -13: "INFER_CANCELLED",
    -14: "INVALID_C_PARAM",
    -15: "UNKNOWN_C_ERROR",
    -16: "NOT_IMPLEMENT_C_METHOD",
    -17: "UNKNOW_EXCEPTION",
}
CHAT_HISTORY_STATUS_NAMES: Dict[int, str] = {
    0: "OV_GENAI_CHAT_HISTORY_OK",
    -1: "OV_GENAI_CHAT_HISTORY_INVALID_PARAM",
    -2: "OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS",
    -3: "OV_GENAI_CHAT_HISTORY_EMPTY",
    -4: "OV_GENAI_CHAT_HISTORY_INVALID_JSON",
    -5: "OV_GENAI_CHAT_HISTORY_ERROR",
}
JSON_CONTAINER_STATUS_NAMES: Dict[int, str] = {
    0: "OV_GENAI_JSON_CONTAINER_OK",
    -1: "OV_GENAI_JSON_CONTAINER_INVALID_PARAM",
    -2: "OV_GENAI_JSON_CONTAINER_INVALID_JSON",
    -3: "OV_GENAI_JSON_CONTAINER_OUT_OF_BOUNDS",
    -4: "OV_GENAI_JSON_CONTAINER_ERROR",
}


class GenAIError(RuntimeError):
    """Base of every ovgenai_c error. ``status`` is the C status (None for checks made in Python).

    A ``RuntimeError``, like every error ``openvino_genai`` raises from C++ (invalid config, input or use)."""

    def __init__(self, message: str, status: Optional[int] = None, status_name: Optional[str] = None,
                 function: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.status_name = status_name
        self.function = function


class GeneralError(GenAIError):
    """GENERAL_ERROR / *_ERROR: the library failed without a more specific status."""


class NotImplementedGenAIError(GenAIError, NotImplementedError):
    """The library (or the C ABI) does not implement what was asked."""


class NotSupportedError(NotImplementedGenAIError):
    """Asked for something the C ABI or the loaded library cannot do (refused before calling C)."""


class NetworkNotLoadedError(GenAIError):
    """NETWORK_NOT_LOADED."""


class ParameterMismatchError(GenAIError, ValueError):
    """PARAMETER_MISMATCH."""


class NotFoundError(GenAIError, LookupError):
    """NOT_FOUND."""


class OutOfBoundsError(GenAIError, IndexError):
    """OUT_OF_BOUNDS: an index or a buffer size is out of range."""


class UnexpectedError(GenAIError):
    """UNEXPECTED."""


class RequestBusyError(GenAIError):
    """REQUEST_BUSY."""


class ResultNotReadyError(GenAIError):
    """RESULT_NOT_READY."""


class NotAllocatedError(GenAIError, MemoryError):
    """NOT_ALLOCATED: the library could not allocate."""


class InferNotStartedError(GenAIError):
    """INFER_NOT_STARTED."""


class NetworkNotReadError(GenAIError):
    """NETWORK_NOT_READ: the model could not be read."""


class InferCancelledError(GenAIError):
    """INFER_CANCELLED."""


class InvalidParameterError(GenAIError, ValueError):
    """INVALID_C_PARAM / *_INVALID_PARAM, or an argument rejected in Python before calling C."""


class UnknownCError(GenAIError):
    """UNKNOWN_C_ERROR."""


class UnknownExceptionError(GenAIError):
    """UNKNOW_EXCEPTION (-17): a C++ exception inside the library (upstream drops its text)."""


class EmptyError(GenAIError, IndexError):
    """OV_GENAI_CHAT_HISTORY_EMPTY: the history holds no message."""


class InvalidJSONError(GenAIError, ValueError):
    """*_INVALID_JSON: not valid JSON, or the wrong JSON shape."""


# Errors raised by Python-side checks (status None), so the user gets the real cause.
class ModelNotFoundError(GenAIError, FileNotFoundError):
    """The model path does not exist or lacks a file the pipeline needs."""


class ConfigError(GenAIError, ValueError):
    """A generation config value or combination that upstream's validation rejects."""


class DeviceError(GenAIError, ValueError):
    """A device string that is malformed or unknown."""


class LibraryNotFoundError(GenAIError, OSError):
    """No library implementing the GenAI C ABI could be loaded; the message lists every place tried."""


class MissingSymbolError(GenAIError, AttributeError):
    """The loaded library lacks a declared C function."""


class PipelineClosedError(GenAIError):
    """The pipeline was closed."""


class GenerationTimeoutError(GenAIError, TimeoutError):
    """A generate call exceeded its ``timeout`` and was cancelled natively."""


OV_STATUS_EXCEPTIONS: Dict[int, Type[GenAIError]] = {
    -1: GeneralError,
    -2: NotImplementedGenAIError,
    -3: NetworkNotLoadedError,
    -4: ParameterMismatchError,
    -5: NotFoundError,
    -6: OutOfBoundsError,
    -7: UnexpectedError,
    -8: RequestBusyError,
    -9: ResultNotReadyError,
    -10: NotAllocatedError,
    -11: InferNotStartedError,
    -12: NetworkNotReadError,
    -13: InferCancelledError,
    -14: InvalidParameterError,
    -15: UnknownCError,
    -16: NotImplementedGenAIError,
    -17: UnknownExceptionError,
}
CHAT_HISTORY_EXCEPTIONS: Dict[int, Type[GenAIError]] = {
    -1: InvalidParameterError,
    -2: OutOfBoundsError,
    -3: EmptyError,
    -4: InvalidJSONError,
    -5: GeneralError,
}
JSON_CONTAINER_EXCEPTIONS: Dict[int, Type[GenAIError]] = {
    -1: InvalidParameterError,
    -2: InvalidJSONError,
    -3: OutOfBoundsError,
    -4: GeneralError,
}

_FAMILIES = {
    "ov": (OV_STATUS_NAMES, OV_STATUS_EXCEPTIONS),
    "chat_history": (CHAT_HISTORY_STATUS_NAMES, CHAT_HISTORY_EXCEPTIONS),
    "json_container": (JSON_CONTAINER_STATUS_NAMES, JSON_CONTAINER_EXCEPTIONS),
}

def status_name(status: int, family: str = "ov") -> str:
    """The C name of a status value; unknown values get a name that says so."""
    names = _FAMILIES[family][0]
    return names.get(int(status), f"UNKNOWN_STATUS_{int(status)}")


def error_for(status: int, function: str, family: str = "ov", hint: Optional[str] = None,
              detail: Optional[Callable[[], Optional[str]]] = None) -> GenAIError:
    """Build the exception for a failing status (does not raise). ``detail`` returns the library's own text
    for the failure, when it keeps one (the bundled backend does; the official library does not)."""
    status = int(status)
    names, table = _FAMILIES[family]
    name = names.get(status, f"UNKNOWN_STATUS_{status}")
    cls = table.get(status, GeneralError)
    text = None
    if detail is not None:
        try:
            text = detail()
        except Exception:  # pragma: no cover - a broken provider must not hide the real error
            text = None
    detail_text = text
    message = f"{function} failed with {name} ({status})"
    if detail_text:
        message += f": {detail_text}"
    if hint:
        message += f"; {hint}" if detail_text else f": {hint}"
    if not detail_text and not hint and status == -17:
        message += (": the library raised a C++ exception and the GenAI C API does not report its text "
                    "(model files, device, properties or config are the usual causes)")
    return cls(message, status=status, status_name=name, function=function)


def check(status: int, function: str, family: str = "ov", hint: Optional[str] = None,
          detail: Optional[Callable[[], Optional[str]]] = None) -> None:
    """Raise the typed exception for ``status`` unless it is OK (0)."""
    if status != 0:
        raise error_for(status, function, family, hint, detail)
