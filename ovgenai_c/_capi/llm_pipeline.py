"""cdefs/05_llm_pipeline.h: pipelines, generate calls, their decoded results and the streamer callback."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ..results import PerfMetrics
from . import bundled, chat_history, generation_config, perf_metrics
from .checked import CApi, per_ffi_callback

_UNKNOWN_EXCEPTION = -17  # ov_status_e UNKNOW_EXCEPTION: the C API drops the C++ exception's text
_STREAMING_CANCEL = 2  # ov_genai_streaming_status_e CANCEL


class Generated(NamedTuple):
    """What one generate call's native results hold (the bundled extras' fields are None without them)."""

    text: str
    perf: Optional[PerfMetrics]
    tokens: Optional[List[List[int]]] = None
    scores: Optional[List[float]] = None
    finish_reasons: Optional[List[int]] = None


def create(capi: CApi, models_path: str, device: str, properties: Sequence[Tuple[str, str]]) -> Any:
    """A native pipeline (the variadic create takes the properties as key, value strings); free it with
    :func:`free` on the thread that made it."""
    ffi = capi.ffi
    out = ffi.new("ov_genai_llm_pipeline**")
    strings = [ffi.new("char[]", s.encode("utf-8")) for kv in properties for s in kv]
    status = capi.lib.ov_genai_llm_pipeline_create(models_path.encode("utf-8"), device.encode("utf-8"),
                                                   len(strings), out, *strings)
    if status != 0:
        if properties:
            hint = f"check the device {device!r} and the properties {', '.join(k for k, _ in properties)}"
        else:
            hint = f"check the model folder {models_path} and the device {device!r}"
        raise capi.error(status, "ov_genai_llm_pipeline_create", hint if status == _UNKNOWN_EXCEPTION else None)
    return out[0]


def free(capi: CApi, pipe: Any) -> None:
    capi.lib.ov_genai_llm_pipeline_free(pipe)


def start_chat(capi: CApi, pipe: Any) -> None:
    capi.call("ov_genai_llm_pipeline_start_chat", pipe)


def finish_chat(capi: CApi, pipe: Any) -> None:
    capi.call("ov_genai_llm_pipeline_finish_chat", pipe)


def set_generation_config(capi: CApi, pipe: Any, config: Any) -> None:
    """Give the pipeline ``config`` (a GenerationConfig) as its own."""
    with generation_config.native(capi, config) as native:
        capi.call("ov_genai_llm_pipeline_set_generation_config", pipe, native)


def max_new_tokens(capi: CApi, pipe: Any) -> int:
    """The pipeline's own max_new_tokens (the one field the C ABI reads back)."""
    ffi = capi.ffi
    out = ffi.new("ov_genai_generation_config**")
    capi.call("ov_genai_llm_pipeline_get_generation_config", pipe, out)
    handle = ffi.gc(out[0], capi.lib.ov_genai_generation_config_free)
    try:
        return generation_config.max_new_tokens(capi, handle)
    finally:
        ffi.release(handle)


def _cancel_on_error(exc_type: Any, exc_value: Any, tb: Any) -> int:
    return _STREAMING_CANCEL  # cffi's last resort: nothing may cross into C


def text_callback(ffi: Any) -> Any:
    """The ``streamer_callback`` function, dispatching each chunk to the bridge passed in ``args``
    (``bridge.on_chunk(bytes)`` returns the streaming status)."""
    def make() -> Any:
        @ffi.callback("ov_genai_streaming_status_e(*)(const char*, void*)", onerror=_cancel_on_error)
        def _streamer(text_ptr: Any, args: Any) -> int:
            data = ffi.string(text_ptr) if text_ptr != ffi.NULL else b""
            return ffi.from_handle(args).on_chunk(data)

        return _streamer

    return per_ffi_callback("text", ffi, make)


@contextlib.contextmanager
def streamer(capi: CApi, bridge: Optional[Any]) -> Iterator[Any]:
    """A ``streamer_callback*`` that hands the text to ``bridge`` for a ``with`` block (NULL for None)."""
    if bridge is None:
        yield capi.ffi.NULL
        return
    ffi = capi.ffi
    handle = ffi.new_handle(bridge)
    s = ffi.new("streamer_callback*")
    s.callback_func = text_callback(ffi)
    s.args = handle
    try:
        yield s
    finally:
        del s, handle


def generate(capi: CApi, pipe: Any, config: Any, streamer: Any, *, prompt: Optional[bytes] = None,
             history: Optional[Any] = None, ids: Optional[List[int]] = None, mask: Optional[List[int]] = None,
             on_return: Callable[[], None]) -> Optional[Generated]:
    """One generate call from a prompt, a conversation (a ChatHistory) or token ids (the bundled extra).
    ``on_return`` runs as soon as C returns, before its status is checked (the streamer's end). None when the
    library returned no results object."""
    ffi = capi.ffi
    results_pp = ffi.new("ov_genai_decoded_results**")
    if ids is not None:
        fn = bundled.GENERATE_TOKENS
        status = bundled.generate_tokens(capi, pipe, ids, mask, config, streamer, results_pp)
    elif history is not None:
        fn = "ov_genai_llm_pipeline_generate_with_history"
        with chat_history.native(capi, history) as native_history:
            status = capi.lib.ov_genai_llm_pipeline_generate_with_history(pipe, native_history, config, streamer,
                                                                          results_pp)
    else:
        fn = "ov_genai_llm_pipeline_generate"
        status = capi.lib.ov_genai_llm_pipeline_generate(pipe, prompt, config, streamer, results_pp)
    results = results_pp[0]
    try:
        on_return()
        capi.check(status, fn)
        if results == ffi.NULL:
            return None
        return read_results(capi, results)
    finally:
        if results != ffi.NULL:
            capi.lib.ov_genai_decoded_results_free(results)


def read_results(capi: CApi, results: Any) -> Generated:
    """The text (the C string form), the perf metrics and, with the bundled extras, ids/scores/finish reasons."""
    ffi = capi.ffi
    size = ffi.new("size_t*")
    capi.call("ov_genai_decoded_results_get_string", results, ffi.NULL, size)
    buf = ffi.new("char[]", size[0])
    capi.call("ov_genai_decoded_results_get_string", results, buf, size)
    text = ffi.string(buf, size[0]).decode("utf-8", "replace")
    metrics = ffi.new("ov_genai_perf_metrics**")
    capi.call("ov_genai_decoded_results_get_perf_metrics", results, metrics)
    try:
        perf = perf_metrics.read(capi, metrics[0])
    finally:
        capi.lib.ov_genai_decoded_results_perf_metrics_free(metrics[0])
    return Generated(text, perf, *bundled.read_sequences(capi, results))
