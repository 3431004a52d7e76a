"""cdefs/08_whisper_pipeline.h: Whisper pipelines, transcription calls, their decoded results and chunks.

``ov_genai_whisper_pipeline_generate`` takes raw float32 PCM and no streamer: the C ABI has no cancellation for
Whisper and streams no text, so only the bundled backend's extras (cdefs/95) can stop it (a cancel switch) or stream
it (a generate with a streamer). Its perf metrics are the base ones; the language and Whisper's stage durations come
from the bundled backend's optional extras (cdefs/95) too, where the library has them."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ..results import PerfMetrics
from . import bundled, perf_metrics, whisper_generation_config
from .checked import CApi
from .llm_pipeline import text_callback
from .text import buffer_text

_UNKNOWN_EXCEPTION = -17  # ov_status_e UNKNOW_EXCEPTION: the C API drops the C++ exception's text
CREATE = "ov_genai_whisper_pipeline_create"
GENERATE = "ov_genai_whisper_pipeline_generate"
LANGUAGE = "ovgenai_c_bundled_whisper_decoded_results_get_language"  # cdefs/95, optional
DURATIONS = "ovgenai_c_bundled_whisper_decoded_results_get_durations"  # cdefs/95, optional
GET_CANCEL = "ovgenai_c_bundled_whisper_pipeline_get_cancel"  # cdefs/95, optional (with the two below)
CANCEL = "ovgenai_c_bundled_whisper_cancel"
GENERATE_STREAMING = "ovgenai_c_bundled_whisper_pipeline_generate_with_streamer"  # cdefs/95, optional
WORDS_COUNT = "ovgenai_c_bundled_whisper_decoded_results_get_words_count"  # cdefs/95, optional (with the two below)
WORD = "ovgenai_c_bundled_whisper_decoded_results_get_word"
WORD_TOKEN_IDS = "ovgenai_c_bundled_whisper_decoded_results_get_word_token_ids"
_NOT_FOUND = -5  # ov_status_e NOT_FOUND: results without words
# Whisper's stages, as the durations extra names them
STAGES = ("features_extraction", "encode_inference", "decode_inference", "word_level_timestamps_processing")


class Chunk(NamedTuple):
    """One timestamped segment of a transcription (seconds)."""

    start_ts: float
    end_ts: float
    text: str


class Word(NamedTuple):
    """One word of a transcription with its time in seconds (the bundled backend's word timestamps)."""

    word: str
    token_ids: List[int]
    start_ts: float
    end_ts: float


class Transcribed(NamedTuple):
    """What one generate call's native results hold."""

    texts: List[str]
    scores: List[float]
    chunks: Optional[List[Chunk]]  # None: the results have no chunks (return_timestamps off)
    text: str  # the C string form (get_string)
    perf: PerfMetrics
    language: Optional[str] = None  # "en", given or detected (cdefs/95: the bundled backend's extra; else None)
    stages: Optional[Dict[str, List[float]]] = None  # Whisper's stage durations, µs (cdefs/95; else None)
    words: Optional[List[Word]] = None  # word timestamps (cdefs/95); None: not asked for, or no such extra


def create(capi: CApi, models_path: str, device: str, properties: Sequence[Tuple[str, str]]) -> Any:
    """A native Whisper pipeline (properties as key, value strings); free it with :func:`free` on its thread."""
    ffi = capi.ffi
    out = ffi.new("ov_genai_whisper_pipeline**")
    strings = [ffi.new("char[]", s.encode("utf-8")) for kv in properties for s in kv]
    status = capi.lib.ov_genai_whisper_pipeline_create(models_path.encode("utf-8"), device.encode("utf-8"),
                                                       len(strings), out, *strings)
    if status != 0:
        hint = None
        if status == _UNKNOWN_EXCEPTION:
            hint = (f"check that {models_path} is a Whisper model folder (encoder and decoder IR, tokenizer IR, "
                    f"generation_config.json) the library supports, and the device {device!r}")
        raise capi.error(status, CREATE, hint)
    return out[0]


def free(capi: CApi, pipe: Any) -> None:
    capi.lib.ov_genai_whisper_pipeline_free(pipe)


def cancel_switch(capi: CApi, pipe: Any) -> Any:
    """The pipeline's cancel handle (the bundled backend's extra; freed by ``ffi.gc``, valid after the pipeline's
    free), or None where the library has none. Call on the pipeline's thread, not during a generate."""
    if not capi.has(GET_CANCEL):
        return None
    out = capi.ffi.new("ovgenai_c_whisper_cancel**")
    capi.call(GET_CANCEL, pipe, out)
    return capi.ffi.gc(out[0], capi.lib.ovgenai_c_bundled_whisper_cancel_free)


def cancel(capi: CApi, switch: Any) -> bool:
    """Stop the pipeline's running transcription at its next decoder step (any thread): whether one was running.
    Its generate then fails with INFER_CANCELLED."""
    running = capi.ffi.new("int*")
    capi.call(CANCEL, switch, running)
    return bool(running[0])


def get_generation_config(capi: CApi, pipe: Any) -> Any:
    """A copy of the pipeline's own config (freed by ``ffi.gc``; release it once done)."""
    out = capi.ffi.new("ov_genai_whisper_generation_config**")
    capi.call("ov_genai_whisper_pipeline_get_generation_config", pipe, out)
    return capi.ffi.gc(out[0], capi.lib.ov_genai_whisper_generation_config_free)


def read_generation_config(capi: CApi, pipe: Any) -> dict:
    """The Whisper fields (and max_new_tokens) of the pipeline's own config."""
    with whisper_generation_config.released(capi, get_generation_config(capi, pipe)) as handle:
        return whisper_generation_config.read(capi, handle)


def set_generation_config(capi: CApi, pipe: Any, values: Mapping[str, Any]) -> None:
    """Make the pipeline's own config its current one with the Whisper fields of ``values`` set."""
    with whisper_generation_config.released(capi, get_generation_config(capi, pipe)) as handle:
        whisper_generation_config.update(capi, handle, values)
        capi.call("ov_genai_whisper_pipeline_set_generation_config", pipe, handle)


def generate(capi: CApi, pipe: Any, samples: Any, values: Optional[Mapping[str, Any]],
             bridge: Optional[Any] = None) -> Transcribed:
    """Transcribe ``samples`` (a C-contiguous float32 numpy array, kept alive by the caller until this returns).
    ``values``: the Whisper fields for this call, set on a copy of the pipeline's own config (None: the pipeline's
    config as it is, passed as NULL). ``bridge`` (a StreamBridge; the bundled backend's streaming extra, which the
    caller checked): the text goes to its ``on_chunk``, or the token ids to its ``on_token_ids`` when it has
    ``on_tokens`` (through the thread's token streamer), and its ``finish()`` runs as soon as C returns."""
    ffi, lib = capi.ffi, capi.lib
    n = int(samples.size)
    raw = ffi.from_buffer("float[]", samples) if n else ffi.new("float[]", 1)  # never NULL (refused by C)
    results_pp = ffi.new("ov_genai_whisper_decoded_results**")
    native_config = ffi.NULL
    args = streamer = None
    token_streaming = bridge is not None and bridge.on_tokens is not None
    if bridge is not None:
        args = ffi.new_handle(bridge)
        streamer = ffi.NULL
        if not token_streaming:
            streamer = ffi.new("streamer_callback*")
            streamer.callback_func = text_callback(ffi)
            streamer.args = args
    try:
        if values is not None:
            native_config = get_generation_config(capi, pipe)
            whisper_generation_config.update(capi, native_config, values)
        if bridge is None:
            fn = GENERATE
            status = lib.ov_genai_whisper_pipeline_generate(pipe, raw, n, native_config, results_pp)
        else:
            fn = GENERATE_STREAMING
            if token_streaming:
                bundled.set_token_streamer(capi, args)
            try:
                status = lib.ovgenai_c_bundled_whisper_pipeline_generate_with_streamer(pipe, raw, n, native_config,
                                                                                        streamer, results_pp)
            finally:
                if token_streaming:
                    bundled.set_token_streamer(capi, None)
            bridge.finish()
        results = results_pp[0]
        try:
            if status != 0:
                raise capi.error(status, fn)
            if results == ffi.NULL:
                raise capi.error(-1, fn, "the library returned OK without results")
            return read_results(capi, results)
        finally:
            if results != ffi.NULL:
                lib.ov_genai_whisper_decoded_results_free(results)
    finally:
        if native_config != ffi.NULL:
            ffi.release(native_config)
        del raw, args, streamer


def _two_call_string(capi: CApi, fn: str, *args: Any) -> str:
    ffi = capi.ffi
    size = ffi.new("size_t*")
    capi.call(fn, *args, ffi.NULL, size)
    buf = ffi.new("char[]", size[0])
    capi.call(fn, *args, buf, size)
    return buffer_text(ffi, buf, size[0])


def read_chunk(capi: CApi, chunk: Any) -> Chunk:
    """start_ts, end_ts and text of a native chunk (the caller frees it)."""
    f = capi.ffi.new("float*")
    capi.call("ov_genai_whisper_decoded_result_chunk_get_start_ts", chunk, f)
    start = float(f[0])
    capi.call("ov_genai_whisper_decoded_result_chunk_get_end_ts", chunk, f)
    end = float(f[0])
    return Chunk(start, end, _two_call_string(capi, "ov_genai_whisper_decoded_result_chunk_get_text", chunk))


def read_results(capi: CApi, results: Any) -> Transcribed:
    """Texts, scores, chunks, the string form and the perf metrics of native Whisper results."""
    ffi, lib = capi.ffi, capi.lib
    count = ffi.new("size_t*")
    capi.call("ov_genai_whisper_decoded_results_get_texts_count", results, count)
    texts = [_two_call_string(capi, "ov_genai_whisper_decoded_results_get_text_at", results, i)
             for i in range(count[0])]
    score = ffi.new("float*")
    scores = []
    for i in range(len(texts)):
        capi.call("ov_genai_whisper_decoded_results_get_score_at", results, i, score)
        scores.append(float(score[0]))
    has = ffi.new("bool*")
    capi.call("ov_genai_whisper_decoded_results_has_chunks", results, has)
    chunks: Optional[List[Chunk]] = None
    if has[0]:
        capi.call("ov_genai_whisper_decoded_results_get_chunks_count", results, count)
        chunks = []
        out = ffi.new("ov_genai_whisper_decoded_result_chunk**")
        for i in range(count[0]):
            capi.call("ov_genai_whisper_decoded_results_get_chunk_at", results, i, out)
            try:
                chunks.append(read_chunk(capi, out[0]))
            finally:
                lib.ov_genai_whisper_decoded_result_chunk_free(out[0])
    text = _two_call_string(capi, "ov_genai_whisper_decoded_results_get_string", results)
    metrics = ffi.new("ov_genai_perf_metrics**")
    capi.call("ov_genai_whisper_decoded_results_get_perf_metrics", results, metrics)
    try:
        perf = perf_metrics.read(capi, metrics[0])
    finally:
        lib.ov_genai_decoded_results_perf_metrics_free(metrics[0])
    language = None
    if capi.has(LANGUAGE):
        language = _two_call_string(capi, LANGUAGE, results)
    stages = None
    if capi.has(DURATIONS):
        stages = {}
        for which in STAGES:
            key = which.encode()
            capi.call(DURATIONS, results, key, ffi.NULL, count)
            values = ffi.new("float[]", max(count[0], 1))
            capi.call(DURATIONS, results, key, values, count)
            stages[which] = [float(values[i]) for i in range(count[0])]
    return Transcribed(texts, scores, chunks, text, perf, language, stages, read_words(capi, results))


def read_words(capi: CApi, results: Any) -> Optional[List[Word]]:
    """The word timestamps of native results (None: the call asked for none, or the library has no such extra)."""
    if not capi.has(WORDS_COUNT):
        return None
    ffi, lib = capi.ffi, capi.lib
    count = ffi.new("size_t*")
    status = lib.ovgenai_c_bundled_whisper_decoded_results_get_words_count(results, count)
    if status == _NOT_FOUND:
        return None
    capi.check(status, WORDS_COUNT)
    words = []
    start, end, size, n_ids = ffi.new("float*"), ffi.new("float*"), ffi.new("size_t*"), ffi.new("size_t*")
    for i in range(count[0]):
        capi.call(WORD, results, i, ffi.NULL, ffi.NULL, ffi.NULL, size)
        buf = ffi.new("char[]", size[0])
        capi.call(WORD, results, i, start, end, buf, size)
        capi.call(WORD_TOKEN_IDS, results, i, ffi.NULL, n_ids)
        ids = ffi.new("int64_t[]", max(n_ids[0], 1))
        capi.call(WORD_TOKEN_IDS, results, i, ids, n_ids)
        words.append(Word(buffer_text(ffi, buf, size[0]), [int(ids[j]) for j in range(n_ids[0])],
                          float(start[0]), float(end[0])))
    return words
