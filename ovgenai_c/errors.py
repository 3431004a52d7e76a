"""Status codes → typed exceptions (:func:`error_for`); the status names come from the C declarations' enums
(``ov_status_e``, ``ov_genai_chat_history_status_e``, ``ov_genai_json_container_status_e``). The checked C calls
themselves are made in :mod:`ovgenai_c._capi`.

Every exception derives from :class:`GenAIError`, which is a ``RuntimeError`` as every error of
``openvino_genai``'s pybind module is (so ``except RuntimeError`` in ported code keeps working), and, where one
fits, from the matching builtin too, so ``except FileNotFoundError`` or ``except ValueError`` work as a Python
user expects.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Type

STATUS_ENUM = "ov_status_e"  # the status family of OpenVINO's and most of GenAI's C functions

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


class OpenVINOVersionConflictError(LibraryNotFoundError):
    """A library was refused because it needs another OpenVINO version than the one this process already has
    mapped (two versions' symbols would bind to each other); the message names both. Use a process per library."""


class MissingSymbolError(GenAIError, AttributeError):
    """The loaded library lacks a declared C function."""


class PipelineClosedError(GenAIError):
    """The pipeline was closed."""


class GenerationTimeoutError(GenAIError, TimeoutError):
    """A generate call exceeded its ``timeout`` and was cancelled natively."""


# The exception for each status, by its C name; a GenAI family's names drop their prefix (OV_GENAI_CHAT_HISTORY_,
# OV_GENAI_JSON_CONTAINER_), so the same condition maps alike in every family.
_EXCEPTION_BY_NAME: Dict[str, Type[GenAIError]] = {
    "GENERAL_ERROR": GeneralError,
    "NOT_IMPLEMENTED": NotImplementedGenAIError,
    "NETWORK_NOT_LOADED": NetworkNotLoadedError,
    "PARAMETER_MISMATCH": ParameterMismatchError,
    "NOT_FOUND": NotFoundError,
    "OUT_OF_BOUNDS": OutOfBoundsError,
    "UNEXPECTED": UnexpectedError,
    "REQUEST_BUSY": RequestBusyError,
    "RESULT_NOT_READY": ResultNotReadyError,
    "NOT_ALLOCATED": NotAllocatedError,
    "INFER_NOT_STARTED": InferNotStartedError,
    "NETWORK_NOT_READ": NetworkNotReadError,
    "INFER_CANCELLED": InferCancelledError,
    "INVALID_C_PARAM": InvalidParameterError,
    "UNKNOWN_C_ERROR": UnknownCError,
    "NOT_IMPLEMENT_C_METHOD": NotImplementedGenAIError,
    "UNKNOW_EXCEPTION": UnknownExceptionError,
    "INVALID_PARAM": InvalidParameterError,
    "EMPTY": EmptyError,
    "INVALID_JSON": InvalidJSONError,
    "ERROR": GeneralError,
}
_UNKNOWN_EXCEPTION = "UNKNOW_EXCEPTION"  # (sic, upstream's spelling) a C++ exception whose text the C API drops

_names_cache: Dict[str, Dict[int, str]] = {}


def status_names(enum: str = STATUS_ENUM) -> Dict[int, str]:
    """Value -> C name of every member of the status enum ``enum``, read from the C declarations."""
    names = _names_cache.get(enum)
    if names is None:
        from . import _ffi

        names = _names_cache[enum] = dict(_ffi.get_ffi().typeof(enum).elements)
    return names


def status_name(status: int, enum: str = STATUS_ENUM) -> str:
    """The C name of a status value; unknown values get a name that says so."""
    return status_names(enum).get(int(status), f"UNKNOWN_STATUS_{int(status)}")


def _condition(name: str, enum: str) -> str:
    """A member's name without its family prefix (the prefix of the family's OK member)."""
    prefix = status_names(enum)[0][:-len("OK")]
    return name[len(prefix):] if name.startswith(prefix) else name


def exception_types(enum: str = STATUS_ENUM) -> Dict[int, Type[GenAIError]]:
    """Status value -> exception class, for every failing member of ``enum`` that has its own class."""
    out = {}
    for value, name in status_names(enum).items():
        cls = _EXCEPTION_BY_NAME.get(_condition(name, enum)) if value != 0 else None
        if cls is not None:
            out[value] = cls
    return out


def error_for(status: int, function: str, enum: str = STATUS_ENUM, hint: Optional[str] = None,
              detail: Optional[Callable[[], Optional[str]]] = None) -> GenAIError:
    """Build the exception for a failing status of the family ``enum`` (does not raise). ``detail`` returns the
    library's own text for the failure, when it keeps one (the bundled backend does; the official library does
    not)."""
    status = int(status)
    name = status_name(status, enum)
    condition = _condition(name, enum)
    cls = _EXCEPTION_BY_NAME.get(condition, GeneralError)
    text = None
    if detail is not None:
        try:
            text = detail()
        except Exception:  # pragma: no cover - a broken provider must not hide the real error
            text = None
    message = f"{function} failed with {name} ({status})"
    if text:
        message += f": {text}"
    if hint:
        message += f"; {hint}" if text else f": {hint}"
    if not text and not hint and condition == _UNKNOWN_EXCEPTION:
        message += (": the library raised a C++ exception and the GenAI C API does not report its text "
                    "(model files, device, properties or config are the usual causes)")
    return cls(message, status=status, status_name=name, function=function)
