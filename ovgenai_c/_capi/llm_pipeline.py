"""cdefs/05_llm_pipeline.h: pipelines, generate calls, their decoded results and the streamer callback."""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

from ..results import PerfMetrics
from . import bundled, chat_history, generation_config, perf_metrics
from .checked import CApi, cancel_on_error, per_ffi_callback

_UNKNOWN_EXCEPTION = -17  # ov_status_e UNKNOW_EXCEPTION: the C API drops the C++ exception's text


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
    return generation_config.pipeline_max_new_tokens(capi, "ov_genai_llm_pipeline_get_generation_config", pipe)


def text_callback(ffi: Any) -> Any:
    """The ``streamer_callback`` function, dispatching each chunk to the bridge passed in ``args``
    (``bridge.on_chunk(bytes)`` returns the streaming status)."""
    def make() -> Any:
        @ffi.callback("ov_genai_streaming_status_e(*)(const char*, void*)", onerror=cancel_on_error)
        def _streamer(text_ptr: Any, args: Any) -> int:
            data = ffi.string(text_ptr) if text_ptr != ffi.NULL else b""
            return ffi.from_handle(args).on_chunk(data)

        return _streamer

    return per_ffi_callback("text", ffi, make)


def cancel_callback(ffi: Any) -> Any:
    """The ``streamer_callback`` function of a call whose text nobody reads (no streamer, no timeout): only the
    cancel token of the bridge in ``args`` is looked at (``bridge.on_cancel_check()``), the text is not even
    copied out of C."""
    def make() -> Any:
        @ffi.callback("ov_genai_streaming_status_e(*)(const char*, void*)", onerror=cancel_on_error)
        def _cancel_check(_text_ptr: Any, args: Any) -> int:
            return ffi.from_handle(args).on_cancel_check()

        return _cancel_check

    return per_ffi_callback("cancel", ffi, make)


def generate(capi: CApi, pipe: Any, config: Optional[Any], bridge: Any, *, streamable: bool, cancel_only: bool,
             prompt: Optional[bytes] = None, history: Optional[Any] = None, ids: Optional[List[int]] = None,
             mask: Optional[List[int]] = None,
             config_cache: Optional[generation_config.NativeConfigCache] = None) -> Optional[Generated]:
    """One generate call from a prompt, a conversation (a ChatHistory) or token ids (the bundled extra), with
    ``config`` (a GenerationConfig; None: the pipeline's own). ``bridge`` (a StreamBridge) gets the text through
    the ``streamer_callback`` when ``streamable``, the token ids when it has ``on_tokens`` (the bundled token
    streamer), and its ``finish()`` runs as soon as C returns, before the status is checked. ``cancel_only``: nobody
    reads the text, the callback checks the cancel token only (:func:`cancel_callback`) and the bundled library
    calls it without detokenising. ``config_cache``: where the native config is kept
    between calls (else it is freed after this one). Token ids of the results are read for token input only (the
    text carries them otherwise); the perf metrics are read on first use. None when the library returned no
    results."""
    ffi, lib = capi.ffi, capi.lib
    args = ffi.new_handle(bridge)
    streamer = ffi.NULL
    if streamable:
        streamer = ffi.new("streamer_callback*")
        streamer.callback_func = cancel_callback(ffi) if cancel_only else text_callback(ffi)
        streamer.args = args
    token_streaming = bridge.on_tokens is not None
    native_config = ffi.NULL
    results_pp = ffi.new("ov_genai_decoded_results**")
    cancel_only = cancel_only and capi.has(bundled.CANCEL_ONLY_STREAMING)  # (from here: the bundled extra is on)
    if cancel_only:
        bundled.set_cancel_only_streaming(capi, True)
    if token_streaming:
        bundled.set_token_streamer(capi, args)
    try:
        if config is not None:
            native_config = generation_config.materialise(capi, config) if config_cache is None \
                else config_cache.get(capi, config)
        if ids is not None:
            fn = bundled.GENERATE_TOKENS
            status = bundled.generate_tokens(capi, pipe, ids, mask, native_config, streamer, results_pp)
        elif history is not None:
            fn = "ov_genai_llm_pipeline_generate_with_history"
            native_history = chat_history.materialise(capi, history.get_messages(), history.get_tools(),
                                                      history.get_extra_context())
            try:
                status = lib.ov_genai_llm_pipeline_generate_with_history(pipe, native_history, native_config,
                                                                         streamer, results_pp)
            finally:
                ffi.release(native_history)
        else:
            fn = "ov_genai_llm_pipeline_generate"
            status = lib.ov_genai_llm_pipeline_generate(pipe, prompt, native_config, streamer, results_pp)
        results = results_pp[0]
        try:
            bridge.finish()
            if status != 0:
                raise capi.error(status, fn)
            return None if results == ffi.NULL else read_results(capi, results, want_tokens=ids is not None)
        finally:
            if results != ffi.NULL:
                lib.ov_genai_decoded_results_free(results)
    finally:
        if cancel_only:
            bundled.set_cancel_only_streaming(capi, False)
        if token_streaming:
            bundled.set_token_streamer(capi, None)
        if native_config != ffi.NULL and (config_cache is None or not config_cache.owns(native_config)):
            ffi.release(native_config)
        del args, streamer


def read_results(capi: CApi, results: Any, want_tokens: bool = True) -> Generated:
    """The text (the C string form), the perf metrics (deferred: :func:`perf_metrics.deferred`) and, with the
    bundled extras, scores/finish reasons and (``want_tokens``) the token ids."""
    ffi, lib = capi.ffi, capi.lib
    size = ffi.new("size_t*")
    capi.check(lib.ov_genai_decoded_results_get_string(results, ffi.NULL, size), "ov_genai_decoded_results_get_string")
    buf = ffi.new("char[]", size[0])
    capi.check(lib.ov_genai_decoded_results_get_string(results, buf, size), "ov_genai_decoded_results_get_string")
    text = ffi.string(buf, size[0]).decode("utf-8", "replace")
    metrics = ffi.new("ov_genai_perf_metrics**")
    capi.check(lib.ov_genai_decoded_results_get_perf_metrics(results, metrics),
               "ov_genai_decoded_results_get_perf_metrics")
    perf = perf_metrics.deferred(capi, metrics[0], lib.ov_genai_decoded_results_perf_metrics_free)
    return Generated(text, perf, *bundled.read_sequences(capi, results, want_tokens))
