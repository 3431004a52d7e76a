"""cdefs/93_ovgenai_c_batching.h: the bundled backend's continuous-batching pipeline and its generation handles
(absent from the official library: :func:`available` says whether a library has them)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .checked import CApi
from .text import buffer_text

CREATE = "ovgenai_c_bundled_batching_pipeline_create"
_UNKNOWN_EXCEPTION = -17  # ov_status_e UNKNOW_EXCEPTION: the library's text is all there is


def available(capi: CApi) -> bool:
    """Whether the library exports the batching extra."""
    return capi.has(CREATE)


def create(capi: CApi, models_path: str, device: str, properties: Sequence[Tuple[str, str]]) -> Any:
    """A native batching pipeline (its step loop runs on a native thread of its own until :func:`free`)."""
    ffi = capi.ffi
    out = ffi.new("ovgenai_c_bundled_batching_pipeline**")
    strings = [ffi.new("char[]", s.encode("utf-8")) for kv in properties for s in kv]
    status = capi.lib.ovgenai_c_bundled_batching_pipeline_create(models_path.encode("utf-8"), device.encode("utf-8"),
                                                                 len(strings), out, *strings)
    if status != 0:
        what = "file" if models_path.endswith(".gguf") else "folder"
        hint = f"check the model {what} {models_path} and the device {device!r}"
        raise capi.error(status, CREATE, hint if status == _UNKNOWN_EXCEPTION else None)
    return out[0]


def free(capi: CApi, pipe: Any) -> None:
    capi.lib.ovgenai_c_bundled_batching_pipeline_free(pipe)


def add_request(capi: CApi, pipe: Any, prompt: str, templated: bool, config: Any) -> Any:
    """A new request's handle (free it with :func:`free_handle`)."""
    ffi = capi.ffi
    out = ffi.new("ovgenai_c_bundled_generation_handle**")
    capi.call("ovgenai_c_bundled_batching_pipeline_add_request", pipe, prompt.encode("utf-8"), 1 if templated else 0,
              config, out)
    return out[0]


def add_request_history(capi: CApi, pipe: Any, history: Any, config: Any) -> Any:
    """A request from a native chat history (cdefs/02)."""
    ffi = capi.ffi
    out = ffi.new("ovgenai_c_bundled_generation_handle**")
    capi.call("ovgenai_c_bundled_batching_pipeline_add_request_history", pipe, history, config, out)
    return out[0]


def add_request_tokens(capi: CApi, pipe: Any, ids: List[int], config: Any) -> Any:
    ffi = capi.ffi
    out = ffi.new("ovgenai_c_bundled_generation_handle**")
    capi.call("ovgenai_c_bundled_batching_pipeline_add_request_tokens", pipe, ffi.new("int64_t[]", ids), len(ids),
              config, out)
    return out[0]


def step(capi: CApi, pipe: Any) -> None:
    """One step on this thread (the first call hands the stepping to the caller for good)."""
    capi.call("ovgenai_c_bundled_batching_pipeline_step", pipe)


def has_unfinished(capi: CApi, pipe: Any) -> bool:
    out = capi.ffi.new("int*")
    capi.call("ovgenai_c_bundled_batching_pipeline_has_unfinished", pipe, out)
    return bool(out[0])


_STATS = ("steps", "shared_steps", "max_batch", "running", "waiting", "used_blocks", "block_limit", "preempted",
          "prompt_tokens", "reused_tokens")


def stats(capi: CApi, pipe: Any) -> Dict[str, int]:
    """The step loop's counters (see the header)."""
    ffi = capi.ffi
    cells = [ffi.new("size_t*") for _ in _STATS]
    capi.call("ovgenai_c_bundled_batching_pipeline_get_stats", pipe, *cells)
    return {name: int(c[0]) for name, c in zip(_STATS, cells)}


def has_events(capi: CApi) -> bool:
    """Whether the library has the step signal (:func:`event_fd`)."""
    return capi.has("ovgenai_c_bundled_batching_pipeline_get_event_fd")


def event_fd(capi: CApi, pipe: Any) -> int:
    """The pipeline's step signal: readable after every step, closed by :func:`free` (dup it to keep it)."""
    out = capi.ffi.new("int*")
    capi.call("ovgenai_c_bundled_batching_pipeline_get_event_fd", pipe, out)
    return int(out[0])


def free_handle(capi: CApi, handle: Any) -> None:
    capi.lib.ovgenai_c_bundled_generation_handle_free(handle)


def status(capi: CApi, handle: Any) -> int:
    out = capi.ffi.new("int*")
    capi.call("ovgenai_c_bundled_generation_handle_get_status", handle, out)
    return int(out[0])


def wait(capi: CApi, handle: Any, timeout_ms: int) -> bool:
    """True when the handle has something to read or has ended."""
    out = capi.ffi.new("int*")
    capi.call("ovgenai_c_bundled_generation_handle_wait", handle, timeout_ms, out)
    return bool(out[0])


def read(capi: CApi, handle: Any) -> Tuple[List[int], List[float]]:
    """The unread generated ids and their log-probabilities (taken)."""
    ffi = capi.ffi
    size = ffi.new("size_t*")
    capi.call("ovgenai_c_bundled_generation_handle_read", handle, ffi.NULL, ffi.NULL, size)
    if size[0] == 0:
        return [], []
    ids, probs = ffi.new("int64_t[]", size[0]), ffi.new("float[]", size[0])
    capi.call("ovgenai_c_bundled_generation_handle_read", handle, ids, probs, size)
    return [ids[i] for i in range(size[0])], [float(probs[i]) for i in range(size[0])]


def _two_call_text(capi: CApi, function: str, handle: Any) -> str:
    ffi = capi.ffi
    size = ffi.new("size_t*")
    while True:
        capi.call(function, handle, ffi.NULL, size)
        buf = ffi.new("char[]", size[0])
        status_ = getattr(capi.lib, function)(handle, buf, size)
        if status_ == 0:
            return buffer_text(ffi, buf, size[0])
        if status_ != -6:  # OUT_OF_BOUNDS: it grew between the calls, ask again
            capi.check(status_, function)


def unread(capi: CApi, handle: Any) -> int:
    """How many generated ids are not read yet."""
    ffi = capi.ffi
    size = ffi.new("size_t*")
    capi.call("ovgenai_c_bundled_generation_handle_read", handle, ffi.NULL, ffi.NULL, size)
    return int(size[0])


def text(capi: CApi, handle: Any) -> str:
    """The text of every id given out so far (the streamed chunks joined)."""
    return _two_call_text(capi, "ovgenai_c_bundled_generation_handle_get_text", handle)


def read_text(capi: CApi, handle: Any, buf: Any = None) -> str:
    """The unread streamed text (taken). ``buf`` (a ``size_t*`` and a ``char[]`` from :func:`text_buffer`, reused
    by one reader): one call while the text fits, the two-call form when it does not."""
    if buf is not None:
        size, chars = buf
        size[0] = len(chars)
        status_ = capi.lib.ovgenai_c_bundled_generation_handle_read_text(handle, chars, size)
        if status_ == 0:
            return capi.ffi.unpack(chars, size[0] - 1).decode("utf-8", "replace") if size[0] > 1 else ""
        if status_ != -6:  # OUT_OF_BOUNDS: longer than the buffer, taken below
            capi.check(status_, "ovgenai_c_bundled_generation_handle_read_text")
    return _two_call_text(capi, "ovgenai_c_bundled_generation_handle_read_text", handle)


def text_buffer(capi: CApi, capacity: int = 512) -> Tuple[Any, Any]:
    """A reusable buffer for :func:`read_text` (one reader at a time)."""
    return capi.ffi.new("size_t*"), capi.ffi.new("char[]", capacity)


def error_text(capi: CApi, handle: Any) -> str:
    return _two_call_text(capi, "ovgenai_c_bundled_generation_handle_get_error", handle)


def tokens(capi: CApi, handle: Any) -> List[int]:
    """Every id given out so far."""
    ffi = capi.ffi
    size = ffi.new("size_t*")
    while True:
        capi.call("ovgenai_c_bundled_generation_handle_get_tokens", handle, ffi.NULL, size)
        buf = ffi.new("int64_t[]", max(size[0], 1))
        status_ = capi.lib.ovgenai_c_bundled_generation_handle_get_tokens(handle, buf, size)
        if status_ == 0:
            return [buf[i] for i in range(size[0])]
        if status_ != -6:
            capi.check(status_, "ovgenai_c_bundled_generation_handle_get_tokens")


def result(capi: CApi, handle: Any) -> Tuple[float, int, int]:
    """(score, finish reason, prompt tokens)."""
    ffi = capi.ffi
    score, reason, prompt = ffi.new("float*"), ffi.new("int*"), ffi.new("size_t*")
    capi.call("ovgenai_c_bundled_generation_handle_get_result", handle, score, reason, prompt)
    return float(score[0]), int(reason[0]), int(prompt[0])


def cancel(capi: CApi, handle: Any) -> None:
    capi.call("ovgenai_c_bundled_generation_handle_cancel", handle)


def stop(capi: CApi, handle: Any) -> None:
    capi.call("ovgenai_c_bundled_generation_handle_stop", handle)
