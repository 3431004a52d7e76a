"""cdefs/90_ovgenai_c_bundled.h: the bundled backend's optional extras (absent from the official library; every
caller checks :meth:`CApi.has` first, or the function says what it does without them)."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from .checked import CApi, cancel_on_error, per_ffi_callback

LAST_ERROR = "ovgenai_c_bundled_last_error"
LIVE_HANDLES = "ovgenai_c_bundled_live_handles"
CANCEL_ONLY_STREAMING = "ovgenai_c_bundled_set_cancel_only_streaming"
APPLY_CHAT_TEMPLATE = "ovgenai_c_bundled_generation_config_set_apply_chat_template"
GENERATE_TOKENS = "ovgenai_c_bundled_llm_pipeline_generate_tokens"
TOKEN_STREAMER = "ovgenai_c_bundled_set_token_streamer"
NUM_SEQUENCES = "ovgenai_c_bundled_decoded_results_get_num_sequences"


def last_error(capi: CApi) -> Optional[str]:
    """The library's text for the last failure on this thread (None where the library keeps none)."""
    if not capi.has(LAST_ERROR):
        return None
    ptr = capi.lib.ovgenai_c_bundled_last_error()
    if ptr == capi.ffi.NULL:
        return None
    return capi.ffi.string(ptr).decode("utf-8", "replace") or None


def live_handles(capi: CApi, kind: Optional[str] = None) -> Optional[int]:
    """Live native objects of ``kind`` (all kinds for None) counted by the library; None when it cannot tell."""
    if not capi.has(LIVE_HANDLES):
        return None
    arg = capi.ffi.NULL if kind is None else capi.ffi.new("char[]", kind.encode())
    return int(capi.lib.ovgenai_c_bundled_live_handles(arg))


def set_apply_chat_template(capi: CApi, config: Any, apply: bool) -> None:
    """GenerationConfig.apply_chat_template on a native config."""
    capi.call(APPLY_CHAT_TEMPLATE, config, 1 if apply else 0)


def set_cancel_only_streaming(capi: CApi, on: bool) -> None:
    """On this thread, generate calls give the streamer an empty string per token (no detokenisation) while on:
    for a callback that only watches for cancellation."""
    capi.lib.ovgenai_c_bundled_set_cancel_only_streaming(1 if on else 0)


def token_callback(ffi: Any) -> Any:
    """The token-streamer callback, dispatching each step's ids to the bridge passed in ``args``
    (``bridge.on_token_ids(ids)`` returns the streaming status)."""
    def make() -> Any:
        @ffi.callback("ovgenai_c_bundled_token_callback", onerror=cancel_on_error)
        def _tokens(ids_ptr: Any, size: int, args: Any) -> int:
            return ffi.from_handle(args).on_token_ids([ids_ptr[i] for i in range(size)])

        return _tokens

    return per_ffi_callback("tokens", ffi, make)


def set_token_streamer(capi: CApi, args: Optional[Any]) -> None:
    """On this thread, each generated id goes to the bridge whose cffi handle is ``args`` (None clears it)."""
    ffi = capi.ffi
    if args is None:
        capi.lib.ovgenai_c_bundled_set_token_streamer(ffi.NULL, ffi.NULL)
    else:
        capi.lib.ovgenai_c_bundled_set_token_streamer(token_callback(ffi), args)


def generate_tokens(capi: CApi, pipe: Any, ids: List[int], mask: Optional[List[int]], config: Any, streamer: Any,
                    results: Any) -> int:
    """Generate from token ids (one sequence); returns the status (the caller checks it after the streamer's end)."""
    ffi = capi.ffi
    c_ids = ffi.new("int64_t[]", ids)
    c_mask = ffi.NULL if mask is None else ffi.new("int64_t[]", mask)
    return capi.lib.ovgenai_c_bundled_llm_pipeline_generate_tokens(pipe, c_ids, len(ids), c_mask, config, streamer,
                                                                   results)


def read_sequences(capi: CApi, results: Any, want_tokens: bool = True
                   ) -> Tuple[Optional[List[List[int]]], Optional[List[float]], Optional[List[int]]]:
    """(token ids, scores, finish reasons) per sequence of native decoded results; Nones without the extras (the
    ids also when not ``want_tokens``)."""
    if not capi.has(NUM_SEQUENCES):
        return None, None, None
    ffi = capi.ffi
    n = ffi.new("size_t*")
    capi.call(NUM_SEQUENCES, results, n)
    tokens, scores, reasons = [], [], []
    size, score, reason = ffi.new("size_t*"), ffi.new("float*"), ffi.new("int*")
    for i in range(n[0]):
        if want_tokens:
            capi.call("ovgenai_c_bundled_decoded_results_get_tokens", results, i, ffi.NULL, size)
            buf = ffi.new("int64_t[]", max(size[0], 1))
            capi.call("ovgenai_c_bundled_decoded_results_get_tokens", results, i, buf, size)
            tokens.append(list(ffi.unpack(buf, size[0])))
        capi.call("ovgenai_c_bundled_decoded_results_get_score", results, i, score)
        scores.append(float(score[0]))
        capi.call("ovgenai_c_bundled_decoded_results_get_finish_reason", results, i, reason)
        reasons.append(int(reason[0]))
    return (tokens if want_tokens else None), scores, reasons


CONVERT_GGUF = "ovgenai_c_bundled_convert_gguf"
GGUF_PARTS = {"model": 1, "tokenizers": 2, "all": 3}


def convert_gguf(capi: CApi, gguf_path: str, out_dir: str, parts: str) -> None:
    """Write the OpenVINO IR of a GGUF file (``parts``: "model", "tokenizers" or "all") into the folder ``out_dir``."""
    capi.call(CONVERT_GGUF, gguf_path.encode(), out_dir.encode(), GGUF_PARTS[parts])
