"""cdefs/06_vlm_pipeline.h: VLM pipelines, generate calls with images, their decoded results.

Images reach C as ``ov_tensor_t`` made by libopenvino_c (:mod:`ovgenai_c._openvino`) with
``ov_tensor_create_from_host_ptr`` over arrays the caller of :func:`generate` owns (already private, C-contiguous
copies: see :mod:`ovgenai_c.vlm_pipeline`); the tensors and their arrays stay alive until C has returned."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from . import bundled, chat_history, generation_config, perf_metrics
from .checked import CApi
from .llm_pipeline import Generated, cancel_callback, text_callback
from .text import buffer_text

_UNKNOWN_EXCEPTION = -17  # ov_status_e UNKNOW_EXCEPTION: the C API drops the C++ exception's text
CREATE = "ov_genai_vlm_pipeline_create"


def create(capi: CApi, models_path: str, device: str, properties: Sequence[Tuple[str, str]]) -> Any:
    """A native VLM pipeline (properties as key, value strings); free it with :func:`free` on its thread."""
    ffi = capi.ffi
    out = ffi.new("ov_genai_vlm_pipeline**")
    strings = [ffi.new("char[]", s.encode("utf-8")) for kv in properties for s in kv]
    status = capi.lib.ov_genai_vlm_pipeline_create(models_path.encode("utf-8"), device.encode("utf-8"),
                                                   len(strings), out, *strings)
    if status != 0:
        hint = None
        if status == _UNKNOWN_EXCEPTION:
            hint = (f"check that {models_path} is a VLM model folder (language, text-embeddings and vision IR) the "
                    f"library supports, and the device {device!r}")
        raise capi.error(status, CREATE, hint)
    return out[0]


def free(capi: CApi, pipe: Any) -> None:
    capi.lib.ov_genai_vlm_pipeline_free(pipe)


def start_chat(capi: CApi, pipe: Any) -> None:
    capi.call("ov_genai_vlm_pipeline_start_chat", pipe)


def finish_chat(capi: CApi, pipe: Any) -> None:
    capi.call("ov_genai_vlm_pipeline_finish_chat", pipe)


def set_generation_config(capi: CApi, pipe: Any, config: Any) -> None:
    """Give the pipeline ``config`` (a GenerationConfig) as its own."""
    with generation_config.native(capi, config) as native:
        capi.call("ov_genai_vlm_pipeline_set_generation_config", pipe, native)


def max_new_tokens(capi: CApi, pipe: Any) -> int:
    """The pipeline's own max_new_tokens (the one field the C ABI reads back)."""
    return generation_config.pipeline_max_new_tokens(capi, "ov_genai_vlm_pipeline_get_generation_config", pipe)


def image_tensors(arrays: Sequence[Any]) -> list:
    """libopenvino_c tensors (U8, the arrays' shapes) over ``arrays``' memory; each keeps its array alive."""
    if not arrays:
        return []
    from .. import _openvino

    ov = _openvino.get_openvino()
    return [_openvino.Tensor.from_array(ov, a) for a in arrays]


def generate(capi: CApi, pipe: Any, config: Optional[Any], bridge: Any, *, streamable: bool, cancel_only: bool,
             prompt: Optional[bytes] = None, history: Optional[Any] = None, ids: Optional[Any] = None,
             mask: Optional[Any] = None, images: Sequence[Any] = (),
             config_cache: Optional[generation_config.NativeConfigCache] = None) -> Optional[Generated]:
    """One VLM generate call from a prompt or a ChatHistory with ``images`` (uint8 HWC/NHWC arrays), as
    :func:`ovgenai_c._capi.llm_pipeline.generate` (``ids``/``mask``: never given; token input is LLM-only)."""
    if ids is not None:
        raise TypeError("a VLM pipeline takes text, not token ids")
    ffi, lib = capi.ffi, capi.lib
    tensors = image_tensors(images)
    rgbs = ffi.new("const struct ov_tensor*[]", [t.c for t in tensors]) if tensors else ffi.NULL
    args = ffi.new_handle(bridge)
    streamer = ffi.NULL
    if streamable:
        streamer = ffi.new("streamer_callback*")
        streamer.callback_func = cancel_callback(ffi) if cancel_only else text_callback(ffi)
        streamer.args = args
    native_config = ffi.NULL
    results_pp = ffi.new("ov_genai_vlm_decoded_results**")
    cancel_only = cancel_only and capi.has(bundled.CANCEL_ONLY_STREAMING)  # (from here: the bundled extra is on)
    if cancel_only:
        bundled.set_cancel_only_streaming(capi, True)
    try:
        if config is not None:
            native_config = generation_config.materialise(capi, config) if config_cache is None \
                else config_cache.get(capi, config)
        if history is not None:
            fn = "ov_genai_vlm_pipeline_generate_with_history"
            native_history = chat_history.materialise(capi, history.get_messages(), history.get_tools(),
                                                      history.get_extra_context())
            try:
                status = lib.ov_genai_vlm_pipeline_generate_with_history(pipe, native_history, rgbs, len(tensors),
                                                                         native_config, streamer, results_pp)
            finally:
                ffi.release(native_history)
        else:
            fn = "ov_genai_vlm_pipeline_generate"
            status = lib.ov_genai_vlm_pipeline_generate(pipe, prompt, rgbs, len(tensors), native_config, streamer,
                                                        results_pp)
        results = results_pp[0]
        try:
            bridge.finish()
            if status != 0:
                raise capi.error(status, fn)
            return None if results == ffi.NULL else read_results(capi, results)
        finally:
            if results != ffi.NULL:
                lib.ov_genai_vlm_decoded_results_free(results)
    finally:
        if cancel_only:
            bundled.set_cancel_only_streaming(capi, False)
        if native_config != ffi.NULL and (config_cache is None or not config_cache.owns(native_config)):
            ffi.release(native_config)
        del args, streamer, rgbs, tensors


def read_results(capi: CApi, results: Any) -> Generated:
    """The text (the C string form) and the perf metrics of native VLM results."""
    ffi, lib = capi.ffi, capi.lib
    size = ffi.new("size_t*")
    fn = "ov_genai_vlm_decoded_results_get_string"
    capi.check(lib.ov_genai_vlm_decoded_results_get_string(results, ffi.NULL, size), fn)
    buf = ffi.new("char[]", size[0])
    capi.check(lib.ov_genai_vlm_decoded_results_get_string(results, buf, size), fn)
    text = buffer_text(ffi, buf, size[0])
    metrics = ffi.new("ov_genai_perf_metrics**")
    capi.check(lib.ov_genai_vlm_decoded_results_get_perf_metrics(results, metrics),
               "ov_genai_vlm_decoded_results_get_perf_metrics")
    return Generated(text, perf_metrics.deferred(capi, metrics[0], lib.ov_genai_vlm_decoded_results_perf_metrics_free))
