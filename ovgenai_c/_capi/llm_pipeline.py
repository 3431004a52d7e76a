"""cdefs/05_llm_pipeline.h: pipelines, generate calls, their decoded results and the streamer callback."""
from __future__ import annotations

import threading
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

from .._relay import NOT_READ
from ..results import PerfMetrics
from . import bundled, chat_history, generation_config, perf_metrics
from .checked import CApi, cancel_on_error, per_ffi_callback
from .text import buffer_text

_UNKNOWN_EXCEPTION = -17  # ov_status_e UNKNOW_EXCEPTION: the C API drops the C++ exception's text


class Generated(NamedTuple):
    """What one generate call's native results hold (the bundled extras' fields are None without them). With
    ``native`` (a :class:`NativeResults`) only the text was read: the perf metrics, scores and finish reasons
    come from it on first use."""

    text: str
    perf: Optional[PerfMetrics]
    tokens: Optional[List[List[int]]] = None
    scores: Optional[List[float]] = None
    finish_reasons: Optional[List[int]] = None
    native: Optional["NativeResults"] = None


_OUT_OF_BOUNDS = -6  # ov_status_e OUT_OF_BOUNDS: the buffer given to a get_string is too small
TEXT_BUFFER_BYTES = 4096  # the first size of a pipeline's text buffer (it grows to the longest answer read)


class CallBuffers:
    """What every generate call of one pipeline needs from cffi, made once and reused: its results pointer, the
    two streamer structs (the callback functions are fixed, only ``args`` changes per call), the text buffer and
    its size, and whether the bundled cancel-only mode is on for the owner thread. Used on the owner thread only,
    one call at a time."""

    __slots__ = ("results_pp", "size", "text", "text_bytes", "cancel_streamer", "text_streamer", "cancel_only_on")

    def __init__(self, ffi: Any, results_type: str = "ov_genai_decoded_results**") -> None:
        self.results_pp = ffi.new(results_type)
        self.size = ffi.new("size_t*")
        self.text_bytes = TEXT_BUFFER_BYTES
        self.text = ffi.new("char[]", TEXT_BUFFER_BYTES)
        self.cancel_streamer = ffi.new("streamer_callback*")
        self.cancel_streamer.callback_func = cancel_callback(ffi)
        self.text_streamer = ffi.new("streamer_callback*")
        self.text_streamer.callback_func = text_callback(ffi)
        self.cancel_only_on = False  # the bundled library's per-thread cancel-only mode, as last set

    def streamer(self, cancel_only: bool, args: Any) -> Any:
        streamer = self.cancel_streamer if cancel_only else self.text_streamer
        streamer.args = args
        return streamer


def read_text(capi: CApi, results: Any, buffers: CallBuffers, fn: str = "ov_genai_decoded_results_get_string",
              getter: Any = None) -> str:
    """The C string form of decoded results: one call into the pipeline's buffer when the text fits (it grows to
    what did not), else the size query and a second call, as the C ABI's two-call protocol."""
    ffi = capi.ffi
    get = getter if getter is not None else getattr(capi.lib, fn)
    size = buffers.size
    size[0] = buffers.text_bytes
    status = get(results, buffers.text, size)
    if status != 0:
        # too small (or failed): ask for the size, as the two-call protocol does (a failure is raised from there)
        size[0] = 0
        capi.check(get(results, ffi.NULL, size), fn)
        need = size[0]
        if need > buffers.text_bytes:
            buffers.text = ffi.new("char[]", need)
            buffers.text_bytes = need
        size[0] = buffers.text_bytes
        capi.check(get(results, buffers.text, size), fn)
    return buffer_text(ffi, buffers.text, size[0])


_read_lock = threading.Lock()  # every NativeResults' first read (off the call's path: one lock for all is enough)


class NativeResults:
    """Native decoded results kept after their call, whose text was read at once: the perf metrics (and, with the
    bundled extras, the scores and finish reasons) are read on first use — from any thread: the results object
    is a value owned by nothing else — and the native object is freed then (or when this is dropped unread, or
    when the pipeline closes, which reads it first). ``native_kind``: its live-handle kind."""

    native_kind = "results"
    __slots__ = ("_capi", "_handle", "_values", "__weakref__")

    def __init__(self, capi: CApi, handle: Any) -> None:
        self._capi = capi
        self._handle = handle  # ffi.gc'd: freed with this object if never read
        self._values: Any = None

    @property
    def pending(self) -> bool:
        """Whether the native results are still held (not read yet)."""
        return self._handle is not None

    def __call__(self) -> Tuple[PerfMetrics, Optional[List[float]], Optional[List[int]]]:
        """(perf metrics, scores, finish reasons) — the same values on every call; a failure is raised again."""
        with _read_lock:
            values = self._values
            if values is None:
                handle, self._handle = self._handle, None
                capi = self._capi
                try:
                    metrics = capi.ffi.new("ov_genai_perf_metrics**")
                    capi.check(capi.lib.ov_genai_decoded_results_get_perf_metrics(handle, metrics),
                               "ov_genai_decoded_results_get_perf_metrics")
                    try:
                        perf = perf_metrics.read(capi, metrics[0])
                    finally:
                        capi.lib.ov_genai_decoded_results_perf_metrics_free(metrics[0])
                    _, scores, reasons = bundled.read_sequences(capi, handle, want_tokens=False)
                    values = (perf, scores, reasons)
                except BaseException as exc:  # every later use raises it again
                    values = exc
                finally:
                    capi.ffi.release(handle)
                self._values = values
        if isinstance(values, BaseException):
            raise values
        return values

    def discard(self) -> None:
        """Free the native results unread, now: results nobody will get (a cancelled or failed call's), which
        without this would go with the last reference — at once on CPython, at a later collection on PyPy."""
        with _read_lock:
            handle, self._handle = self._handle, None
            if handle is not None:
                self._values = ValueError("these results were discarded")
                self._capi.ffi.release(handle)


def create(capi: CApi, models_path: str, device: str, properties: Sequence[Tuple[str, str]]) -> Any:
    """A native pipeline (the variadic create takes the properties as key, value strings); free it with
    :func:`free` on the thread that made it."""
    ffi = capi.ffi
    out = ffi.new("ov_genai_llm_pipeline**")
    strings = [ffi.new("char[]", s.encode("utf-8")) for kv in properties for s in kv]
    status = capi.lib.ov_genai_llm_pipeline_create(models_path.encode("utf-8"), device.encode("utf-8"),
                                                   len(strings), out, *strings)
    if status != 0:
        what = "file" if models_path.endswith(".gguf") else "folder"
        hint = f"check the model {what} {models_path}, the device {device!r}"
        if properties:
            hint += f" and the properties {', '.join(k for k, _ in properties)}"
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


def _native_config(capi: CApi, config: Any, cache: Optional[generation_config.NativeConfigCache]) -> Any:
    """``config``'s native form: the cache's (kept between calls) or one made for this call."""
    return generation_config.materialise(capi, config) if cache is None else cache.get(capi, config)


def generate(capi: CApi, pipe: Any, config: Optional[Any], bridge: Any, *, streamable: bool, cancel_only: bool,
             prompt: Optional[bytes] = None, history: Optional[Any] = None, ids: Optional[List[int]] = None,
             mask: Optional[List[int]] = None,
             config_cache: Optional[generation_config.NativeConfigCache] = None,
             buffers: Optional[CallBuffers] = None) -> Optional[Generated]:
    """One generate call from a prompt, a conversation (a ChatHistory) or token ids (the bundled extra), with
    ``config`` (a GenerationConfig; None: the pipeline's own). ``bridge`` (a StreamBridge) gets the text through
    the ``streamer_callback`` when ``streamable``, the token ids when it has ``on_tokens`` (the bundled token
    streamer), and its ``finish()`` runs as soon as C returns, before the status is checked. ``cancel_only``: nobody
    reads the text, the callback checks the cancel token only (:func:`cancel_callback`) and the bundled library
    calls it without detokenising. ``config_cache``: where the native config is kept between calls (else it is
    freed after this one). ``buffers``: the pipeline's :class:`CallBuffers` (else made for this call). For text
    input only the text is read now, the rest on first use (:class:`NativeResults`); for token input everything
    is read now, the token ids included. None when the library returned no results."""
    ffi, lib = capi.ffi, capi.lib
    if buffers is None:
        buffers = CallBuffers(ffi)
    args = ffi.new_handle(bridge)
    streamer = buffers.streamer(cancel_only, args) if streamable else ffi.NULL
    token_streaming = bridge.on_tokens is not None
    native_config = ffi.NULL
    results_pp = buffers.results_pp
    results_pp[0] = ffi.NULL
    if cancel_only != buffers.cancel_only_on and capi.has(bundled.CANCEL_ONLY_STREAMING):
        # per thread in the library, so per pipeline (its owner's): switched only when a call needs the other mode
        bundled.set_cancel_only_streaming(capi, cancel_only)
        buffers.cancel_only_on = cancel_only
    if token_streaming:
        bundled.set_token_streamer(capi, args)
    try:
        if config is not None:
            native_config = _native_config(capi, config, config_cache)
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
        return _conclude(capi, bridge, status, fn, buffers, want_tokens=ids is not None)
    finally:
        if token_streaming:
            bundled.set_token_streamer(capi, None)
        if native_config != ffi.NULL and (config_cache is None or not config_cache.owns(native_config)):
            ffi.release(native_config)
        del args, streamer


def _conclude(capi: CApi, bridge: Any, status: int, fn: str, buffers: Any, want_tokens: bool = False,
              results_pp: Any = None, error_text: Optional[str] = None,
              text: Optional[str] = None) -> Optional[Generated]:
    """After C returned ``status`` with the results in ``results_pp`` (default ``buffers.results_pp``): the bridge's
    ``finish()``, then C's error raised, or the results read (the text now, into ``buffers``' text buffer, unless
    ``text`` was already read from them; everything now with ``want_tokens``). Frees what it does not hand over."""
    ffi, lib = capi.ffi, capi.lib
    if results_pp is None:
        results_pp = buffers.results_pp
    results = results_pp[0]
    results_pp[0] = ffi.NULL
    if want_tokens or status != 0 or results == ffi.NULL:
        try:
            bridge.finish()
            if status != 0:
                raise capi.error(status, fn, detail=error_text)
            return None if results == ffi.NULL else read_results(capi, results, want_tokens=want_tokens)
        finally:
            if results != ffi.NULL:
                lib.ov_genai_decoded_results_free(results)
    owned = ffi.gc(results, lib.ov_genai_decoded_results_free)
    try:
        bridge.finish()
        if text is None:
            text = read_text(capi, owned, buffers, getter=lib.ov_genai_decoded_results_get_string)
    except BaseException:
        ffi.release(owned)
        raise
    return Generated(text, None, native=NativeResults(capi, owned))


class TextBuffer:
    """A text buffer for :func:`read_text` (``size``, ``text``, ``text_bytes`` as :class:`CallBuffers` has them) with
    a lock: the relayed calls of one pipeline read their texts on their callers' threads, which may overlap."""

    __slots__ = ("size", "text", "text_bytes", "lock")

    def __init__(self, ffi: Any) -> None:
        types = ffi.call_types  # (made by a pipeline's first relayed call: resolved types, as every call's cdata)
        self.size = types.new(types.size_ptr)
        self.text_bytes = TEXT_BUFFER_BYTES
        self.text = types.new(types.char_array, TEXT_BUFFER_BYTES)
        self.lock = threading.Lock()


class PromptCall:
    """A generate call from a prompt made ready on the caller's thread for ``ov_genai_llm_pipeline_generate`` to
    run on another (the pipeline's owner), then :meth:`conclude`d back on the caller's with C's status. The call has
    its own results pointer and text buffer: with a ``reader`` (``ov_genai_decoded_results_get_string`` as the
    relay's reader) the owner reads the text into it right after the call (:meth:`post`), else (or when it did not
    fit) it is read here into ``text`` (shared by the pipeline's relayed calls, under its lock; its size is what
    this call's buffer starts with): the owner may run the pipeline's next call meanwhile. The native config, the
    prompt and the bridge's handle live as long as this does. ``buffers``: the pipeline's :class:`CallBuffers`, for
    the streamer structs (whose ``args`` only the running call reads)."""

    __slots__ = ("capi", "bridge", "text", "results_pp", "args", "read", "read_size", "_config", "_cached", "_keep")

    def __init__(self, capi: CApi, pipe: Any, prompt: bytes, config: Optional[Any], bridge: Any, *, streamable: bool,
                 cancel_only: bool, config_cache: Optional[generation_config.NativeConfigCache],
                 buffers: CallBuffers, text: TextBuffer, reader: Any = None) -> None:
        ffi = capi.ffi
        self.capi, self.bridge, self.text = capi, bridge, text
        if streamable:
            handle = ffi.new_handle(bridge)
            streamer = buffers.streamer(cancel_only, handle)
        else:
            handle = streamer = ffi.NULL
        native_config = ffi.NULL
        if config is not None:
            native_config = _native_config(capi, config, config_cache)
        self._config = native_config
        self._cached = config_cache is not None and native_config != ffi.NULL and config_cache.owns(native_config)
        types = ffi.call_types
        prompt_text = types.new(types.char_array, prompt)
        self._keep = (handle, prompt_text)
        self.results_pp = types.new(types.decoded_results_ptr)
        self.args = (pipe, prompt_text, native_config, streamer, self.results_pp)
        if reader is not None:
            self.read = types.new(types.char_array, text.text_bytes)
            self.read_size = types.new(types.size_ptr, text.text_bytes)
            self.args += (reader, self.read, self.read_size)
        else:
            self.read = self.read_size = None

    def post(self, relay: Any, fn: Any) -> None:
        """Hand the call to ``relay``'s owner (:class:`ovgenai_c._relay.Relay`), which runs ``fn`` (the generate
        function as the relay's call shape) with :attr:`args`."""
        if self.read is not None:
            relay.post_read(fn, *self.args)
        else:
            relay.post(fn, *self.args)

    def conclude(self, status: int, error_text: Optional[str] = None) -> Optional[Generated]:
        """Once C returned ``status``: the results (as :func:`generate` returns them) or C's error raised (with
        ``error_text``, the library's text for it read on the thread that made the call)."""
        try:
            size = self.read_size[0] if self.read_size is not None else NOT_READ
            if status == 0 and size != NOT_READ:  # the owner read the text (so the shared buffer is not used)
                text = buffer_text(self.capi.ffi, self.read, size)
                return _conclude(self.capi, self.bridge, status, "ov_genai_llm_pipeline_generate", None,
                                 results_pp=self.results_pp, text=text)
            with self.text.lock:
                return _conclude(self.capi, self.bridge, status, "ov_genai_llm_pipeline_generate", self.text,
                                 results_pp=self.results_pp, error_text=error_text)
        finally:
            self.release()

    def release(self) -> None:
        """Let go of the native config (unless the pipeline's cache keeps it) and the call's arguments."""
        config, self._config = self._config, None
        if config is not None and config != self.capi.ffi.NULL and not self._cached:
            self.capi.ffi.release(config)
        self._keep = self.args = self.read = None  # type: ignore[assignment]


def read_results(capi: CApi, results: Any, want_tokens: bool = True) -> Generated:
    """The text (the C string form), the perf metrics (deferred: :func:`perf_metrics.deferred`) and, with the
    bundled extras, scores/finish reasons and (``want_tokens``) the token ids."""
    ffi, lib = capi.ffi, capi.lib
    size = ffi.new("size_t*")
    capi.check(lib.ov_genai_decoded_results_get_string(results, ffi.NULL, size), "ov_genai_decoded_results_get_string")
    buf = ffi.new("char[]", size[0])
    capi.check(lib.ov_genai_decoded_results_get_string(results, buf, size), "ov_genai_decoded_results_get_string")
    text = buffer_text(ffi, buf, size[0])
    metrics = ffi.new("ov_genai_perf_metrics**")
    capi.check(lib.ov_genai_decoded_results_get_perf_metrics(results, metrics),
               "ov_genai_decoded_results_get_perf_metrics")
    perf = perf_metrics.deferred(capi, metrics[0], lib.ov_genai_decoded_results_perf_metrics_free)
    return Generated(text, perf, *bundled.read_sequences(capi, results, want_tokens))
