"""WhisperPipeline: speech to text through the GenAI C API's whisper_pipeline.h (openvino_genai's names).

The machinery of :class:`~ovgenai_c.LLMPipeline` — one owner thread per pipeline that runs every C call (create,
generate, config, free) in order, the error model, ``close()`` / context manager / finalizer — with the Whisper
header. **The C ABI has no cancellation**: ``ov_genai_whisper_pipeline_generate`` takes the whole audio and no
streamer. On the bundled backend an extra (cdefs/95, a cancel switch per pipeline) stops the running transcription
at its next decoder step: ``timeout=`` and Ctrl-C then raise :class:`~ovgenai_c.GenerationTimeoutError` /
``KeyboardInterrupt`` once it has stopped. On a library without it (the official one) they only *abandon the wait*:
the caller gets the error at once while the transcription goes on in C on the owner thread; its result is dropped
when it ends, and the pipeline's next call (and ``close()``) waits for it.

Streaming: ``streamer`` as pybind's — a callable taking text (chunks by GenAI's TextStreamer rules; it may return
True / StreamingStatus.STOP to end the transcription early), a TextStreamer, or a StreamerBase getting token ids —
runs on the bundled backend (cdefs/95's generate with a streamer), with GenAI's timing: without timestamps each
decoded token, with ``return_timestamps`` (and for audio longer than 30 s) each 30 s window's text; a stop keeps
what was decoded. The streamer runs on the pipeline's owner thread; an exception in it stops the transcription and
is raised from ``generate()``. :meth:`WhisperPipeline.stream` is the same as an iterator (:class:`TranscriptionStream`),
:meth:`WhisperPipeline.astream` as an async one.
The official C ABI streams no Whisper text: there a streamer is refused.

Configs: whisper_generation_config.h sets the Whisper fields only (language, task, return_timestamps,
initial_prompt, hotwords, the token ids and suppress lists...). Each call's native config is the pipeline's own
(so it keeps the model's lang_to_id, eos and length limits) with those fields set. The base GenerationConfig fields
(max_new_tokens, sampling, ...) go through the bundled backend's extra (cdefs/95) when they differ from the
pipeline's; on a library without it (the official one), and for lang_to_id or alignment_heads everywhere, a config
that changes them is refused by name with :class:`~ovgenai_c.NotSupportedError` — the C ABI cannot carry it.

Word timestamps: on the bundled backend (cdefs/95's extras: the config field and the results' words) as pybind has
them — the ``word_timestamps=True`` pipeline property prepares the decoder (and makes the field's default True), a
call's ``word_timestamps`` asks for ``res.words``. The official C ABI has neither: there both are refused.
"""
from __future__ import annotations

import json
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional, Tuple, Union

from . import _ffi, _loader, _native_memory, errors
from ._call import check_timeout
from ._capi import whisper_generation_config
from ._capi import whisper_pipeline as native
from ._owner import OwnerThread
from ._streaming import DEADLINE, END, AsyncChunkQueue, ChunkQueue, StreamBridge
from .audio import as_samples
from .pipeline import (OwnedPipeline, _DEVICE_RE, _check_text, _finalize, _live_states, closed_error,
                       _refuse_unsupported_properties, _run_if_open, _State, property_strings, resolve_library)
from .tokenizer_ir_compat import refuse_crashing_tokenizer
from .whisper_config import WhisperGenerationConfig, plain_language
from .whisper_results import (WhisperDecodedResultChunk, WhisperDecodedResults, WhisperPerfMetrics,
                              WhisperWordTiming, base_fields, stage_durations)

# what an optimum-intel Whisper export holds and GenAI's WhisperPipeline loads (the .bin beside each .xml)
WHISPER_IR = ("openvino_encoder_model", "openvino_decoder_model", "openvino_tokenizer", "openvino_detokenizer")
NO_CANCELLATION = ("the GenAI C ABI cannot cancel a Whisper transcription (ov_genai_whisper_pipeline_generate takes "
                   "no streamer)")
STREAMING_EXTRA = native.GENERATE_STREAMING  # what a library needs for streamer= (the bundled backend's extra)
WORDS_EXTRA = native.WORDS_COUNT  # what a library needs for word timestamps (the bundled backend's extra)
BASE_EXTRA = whisper_generation_config.SET_BASE  # ...for per-call base fields (max_new_tokens, sampling...)
CANCEL_POLL_S = 0.02  # while stopping a transcription: how often the switch is pulled again until the call ends


class _CallGate:
    """Lets another thread cancel one transcription and no other: :meth:`cancel` pulls the pipeline's switch only
    while the call that :meth:`run` runs (on the owner thread) is inside it, never the owner's next call."""

    __slots__ = ("_lock", "_running")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = False

    def run(self, fn: Any) -> Any:
        with self._lock:
            self._running = True
        try:
            return fn()
        finally:
            with self._lock:
                self._running = False

    def cancel(self, capi: Any, switch: Any) -> bool:
        """Whether a transcription was stopped (False: the call was not in C at that moment)."""
        with self._lock:
            return self._running and native.cancel(capi, switch)


def no_streaming_reason(lib: _loader.LoadedLibrary) -> str:
    """Why ``lib`` streams no Whisper text (a library without :data:`STREAMING_EXTRA`)."""
    return (f"the {lib.kind} GenAI C library's Whisper pipeline streams no text (ov_genai_whisper_pipeline_generate "
            "takes no streamer; the bundled backend's extra does)")


def no_words_reason(lib: _loader.LoadedLibrary) -> str:
    """Why ``lib`` makes no word timestamps (a library without :data:`WORDS_EXTRA`)."""
    return (f"word-level timestamps are not in the GenAI C ABI (whisper_pipeline.h returns segment chunks only), so "
            f"the {lib.kind} library cannot return them; the bundled backend's extra does")


def word_timestamps_property(value: Any) -> bool:
    """The ``word_timestamps`` pipeline property as a bool (True / False, or "true" / "YES" / "false" / "NO" as
    GenAI reads a string)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("true", "True", "YES", "yes", "false", "False", "NO", "no"):
        return value in ("true", "True", "YES", "yes")
    raise errors.InvalidParameterError(f"property word_timestamps: {value!r} is not a bool (True / False)")


def alignment_heads_of(folder: str) -> List[Tuple[int, int]]:
    """The alignment heads of a Whisper folder's generation_config.json (none: no file, or none in it)."""
    gc_json = Path(folder) / "generation_config.json"
    if not gc_json.is_file():
        return []
    return list(WhisperGenerationConfig(gc_json).alignment_heads)


def missing_functions(lib: _loader.LoadedLibrary) -> List[str]:
    """The whisper_generation_config.h / whisper_pipeline.h functions ``lib`` does not export."""
    return [name for name in _ffi.whisper_functions() if not lib.has_extra(name)]


def missing_whisper_files(folder: Union[str, os.PathLike]) -> List[str]:
    """The files of a Whisper IR folder that ``folder`` lacks."""
    p = Path(folder)
    return [f"{stem}{ext}" for stem in WHISPER_IR for ext in (".xml", ".bin") if not (p / f"{stem}{ext}").is_file()]


def min_samples(folder: Union[str, os.PathLike]) -> int:
    """The fewest samples GenAI's feature extractor takes: more than n_fft / 2 (preprocessor_config.json's n_fft,
    400 by default), for its reflect padding."""
    n_fft = 400
    try:
        with open(Path(folder) / "preprocessor_config.json", "r", encoding="utf-8") as f:
            value = json.load(f).get("n_fft")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            n_fft = value
    except (OSError, ValueError, AttributeError):
        pass
    return n_fft // 2 + 1


def check_whisper_folder(models_path: Any) -> str:
    """The model folder as a str, checked before calling in (the C ABI would only say UNKNOW_EXCEPTION)."""
    if not isinstance(models_path, (str, os.PathLike)):
        raise errors.InvalidParameterError(
            f"models_path must be a str or os.PathLike, not {type(models_path).__name__}")
    path = os.fsdecode(os.fspath(models_path))
    _check_text(path, "models_path")
    p = Path(path)
    if not p.exists():
        raise errors.ModelNotFoundError(f"model path does not exist: {path}")
    if not p.is_dir():
        raise errors.ModelNotFoundError(f"{path} is a file; a Whisper model is an OpenVINO IR folder")
    missing = missing_whisper_files(p)
    if missing:
        raise errors.ModelNotFoundError(
            f"Whisper model folder {path} lacks {', '.join(missing)} (a Whisper IR folder holds the encoder, the "
            "stateful decoder and the tokenizer/detokenizer IR, as optimum-intel exports them)")
    return path


class WhisperPipeline(OwnedPipeline):
    """Automatic speech recognition over the GenAI C API (openvino_genai.WhisperPipeline's names).

    ``WhisperPipeline(models_path, device="CPU", **properties)``; ``generate(raw_speech_input,
    generation_config=None, streamer=None, *, timeout=None, **config_fields)`` takes 16 kHz mono float samples
    (a numpy array or a list; other dtypes by :mod:`ovgenai_c.audio`'s rules) or a WAV file path;
    ``get_generation_config()`` / ``set_generation_config()``, ``get_tokenizer()``. ``timeout`` and Ctrl-C stop
    the transcription on the bundled backend and only abandon the wait elsewhere (see the module).
    """

    def __init__(self, models_path: Union[str, os.PathLike], device: str = "CPU", *,
                 library: Union[None, str, os.PathLike, _loader.LoadedLibrary] = None, **properties: Any) -> None:
        self._state: Optional[_State] = None
        lib = resolve_library(library)
        missing = missing_functions(lib)
        if missing:
            raise errors.NotSupportedError(
                f"the {lib.kind} GenAI C library {lib.path} has no Whisper support: it does not export "
                f"{', '.join(missing[:4])}{' and %d more' % (len(missing) - 4) if len(missing) > 4 else ''}")
        path = check_whisper_folder(models_path)
        refuse_crashing_tokenizer(path, lib)  # (a tokenizer IR GenAI <= 2026.3 would die on)
        if not isinstance(device, str):
            raise errors.DeviceError(f"device must be a str such as 'CPU', not {type(device).__name__}")
        if not _DEVICE_RE.fullmatch(device):
            raise errors.DeviceError(f"malformed device name {device!r} (expected e.g. 'CPU', 'GPU.0', 'AUTO:GPU,CPU')")
        props = dict(properties)
        # GenAI's pipeline property: the decoder exposes its cross-attention (and the config defaults to it)
        self._word_timestamps = word_timestamps_property(props.pop("word_timestamps", False))
        if self._word_timestamps:
            if not lib.has_extra(WORDS_EXTRA):
                raise errors.NotSupportedError(f"word_timestamps: {no_words_reason(lib)}")
            if not alignment_heads_of(path):
                raise errors.ConfigError("word_timestamps: 'word_timestamps' can be true only when 'alignment_heads' "
                                         f"is set and not empty ({path}'s generation_config.json has none).")
            props["word_timestamps"] = True
        _refuse_unsupported_properties(props, None)
        prop_strings = property_strings(props)
        self.models_path = path
        self.device = device
        self.properties = dict(prop_strings)
        self._library = lib
        # (PyPy: pipelines dropped unclosed go first; before the owner thread exists, see LLMPipeline)
        memory_before = _native_memory.before_create()
        owner = OwnerThread(name=f"ovgenai_c-whisper:{Path(path).name}")
        state = _State(lib, owner, native)
        self._min_samples = min_samples(path)

        self._cancel_switch: Any = None  # the bundled backend's cancel handle (None: the library cannot cancel)

        def _create() -> Dict[str, Any]:
            state.handle = native.create(state.capi, path, device, prop_strings)
            self._cancel_switch = native.cancel_switch(state.capi, state.handle)
            return native.read_generation_config(state.capi, state.handle)

        job = owner.submit(_create)
        try:
            interrupted = job.wait_uninterrupted()
            native_config = job.result()
        except BaseException:
            if state.handle is not None:
                state.free_on_owner()
            owner.stop()
            raise
        if interrupted:
            free = state.free_on_owner()
            if free is not None:
                free.wait_uninterrupted()
            owner.join()
            raise KeyboardInterrupt
        self._state = state
        _live_states.add(state)
        self._finalizer = weakref.finalize(self, _finalize, state)
        self._finalizer.atexit = False
        _native_memory.after_create(memory_before)
        self._config = self._initial_config(path, native_config)

    def _initial_config(self, path: str, native_config: Dict[str, Any]) -> WhisperGenerationConfig:
        """The pipeline's config as GenAI holds it: the folder's generation_config.json (base fields, lang_to_id,
        alignment heads), with the Whisper fields and max_new_tokens the library reports."""
        gc_json = Path(path) / "generation_config.json"
        cfg = WhisperGenerationConfig()
        if gc_json.is_file():
            try:
                cfg = WhisperGenerationConfig(gc_json)
            except (errors.GenAIError, OSError, ValueError):
                cfg = WhisperGenerationConfig()
        values = dict(native_config)
        cfg.max_new_tokens = values.pop("max_new_tokens")
        cfg.update_generation_config(**values)
        return cfg

    def _submit(self, fn: Any) -> Any:
        self._live_state()
        st = self._state
        if st.owner.is_current():
            raise RuntimeError("re-entrant call: a streamer must not call its own pipeline")
        with st.lock:
            if not st.closed:
                try:
                    return st.owner.submit(lambda: _run_if_open(st, fn))
                except RuntimeError:
                    raise errors.PipelineClosedError("the pipeline's owner thread is gone") from None
        raise closed_error()  # (outside the lock: at exit a daemon thread parks in it)

    # --- config --------------------------------------------------------------------------------------
    def get_generation_config(self) -> WhisperGenerationConfig:
        """A copy of the pipeline's generation config."""
        self._live_state()
        return self._config.copy()

    def set_generation_config(self, config: WhisperGenerationConfig) -> None:
        """Make ``config`` the pipeline's own (validated and checked to be expressible first)."""
        self._live_state()
        if not isinstance(config, WhisperGenerationConfig):
            raise errors.InvalidParameterError(f"expected a WhisperGenerationConfig, not {type(config).__name__}")
        cfg = self._effective(config.copy())
        values = self._c_values(cfg)
        self._submit(lambda st: native.set_generation_config(st.capi, st.handle, values)).wait()
        self._config = cfg

    def _c_values(self, cfg: WhisperGenerationConfig) -> Dict[str, Any]:
        """What the C side sets for ``cfg`` (an effective config): its Whisper fields, and its base fields when
        they differ from the pipeline's (through the bundled backend's extra; :meth:`_effective` checked)."""
        values = cfg.c_values()
        if cfg.base_values() != self._config.base_values():
            values[whisper_generation_config.BASE_KEY] = cfg
        return values

    def _effective(self, cfg: WhisperGenerationConfig) -> WhisperGenerationConfig:
        """As GenAI resolves a per-call config (unset stop ids, eos and an empty lang_to_id come from the
        pipeline's), validated with upstream's rules, then checked to be expressible through the C ABI."""
        if type(cfg) is not WhisperGenerationConfig:  # e.g. an ASRGenerationConfig: its Whisper fields, as upstream
            cfg = cfg.to_whisper()  # type: ignore[attr-defined]
        base = self._config
        if not cfg.stop_token_ids:
            cfg.stop_token_ids = base.stop_token_ids
        if cfg.eos_token_id == -1 and base.eos_token_id != -1:
            cfg.set_eos_token_id(base.eos_token_id)
        if not cfg.lang_to_id:
            cfg.lang_to_id = base.lang_to_id
        cfg.validate()
        mine, model = cfg.python_only_state(), base.python_only_state()
        differ = [k for k in mine if mine[k] != model[k]]
        if "word_timestamps" in differ:
            if not self._library.has_extra(WORDS_EXTRA):
                raise errors.NotSupportedError(f"word_timestamps: {no_words_reason(self._library)}")
            differ.remove("word_timestamps")  # (the bundled backend's extra sets it)
        base_fields = set(cfg.base_values())
        if self._library.has_extra(BASE_EXTRA) and any(k in base_fields for k in differ):
            differ = [k for k in differ if k not in base_fields]  # (the bundled backend's extra sets them all)
        if cfg.word_timestamps and not self._word_timestamps:
            raise errors.InvalidParameterError(
                "word_timestamps=True needs the pipeline created with the property word_timestamps=True "
                f"({type(self).__name__}(models_path, device, word_timestamps=True)): GenAI prepares the decoder's "
                "cross-attention for word timestamps when it loads the model")
        if differ:
            can_base = self._library.has_extra(BASE_EXTRA)
            raise errors.NotSupportedError(
                f"WhisperGenerationConfig field(s) {', '.join(differ)} differ from the model's own config and cannot "
                "be passed through the GenAI C API (whisper_generation_config.h sets only the Whisper fields: "
                "language, task, return_timestamps, initial_prompt, hotwords, token ids, suppress lists"
                + ("; the bundled backend's extra sets the base fields (max_new_tokens, sampling...) too" if can_base
                   else "; the bundled backend's extra would set base fields such as max_new_tokens")
                + "); start from pipeline.get_generation_config() and change only those")
        return cfg

    def _resolve(self, generation_config: Any, kwargs: Dict[str, Any]) -> Optional[WhisperGenerationConfig]:
        """The config of one call (None: the pipeline's own, unchanged)."""
        if generation_config is not None and not isinstance(generation_config, WhisperGenerationConfig):
            if isinstance(generation_config, dict):
                kwargs = {**generation_config, **kwargs}
                generation_config = None
            else:
                raise errors.InvalidParameterError(
                    f"generation_config must be a WhisperGenerationConfig, not {type(generation_config).__name__}")
        if generation_config is None and not kwargs:
            return None
        cfg = (generation_config or self._config).copy()
        if kwargs:
            try:
                cfg.update_generation_config(**kwargs)
            except TypeError as exc:
                raise errors.InvalidParameterError(str(exc)) from None
        return self._effective(cfg)

    def get_tokenizer(self) -> Any:
        """The model's :class:`~ovgenai_c.Tokenizer` (made once; runs the folder's tokenizer IR)."""
        tok = getattr(self, "_tokenizer", None)
        if tok is None:
            from .tokenizer import Tokenizer

            tok = self._tokenizer = Tokenizer(self.models_path)
        return tok

    # --- transcription -------------------------------------------------------------------------------
    def generate(self, raw_speech_input: Any, generation_config: Optional[WhisperGenerationConfig] = None,
                 streamer: Any = None, *, timeout: Optional[float] = None, **kwargs: Any) -> WhisperDecodedResults:
        """Transcribe (or translate) ``raw_speech_input``: 16 kHz mono samples or a WAV file path.

        ``generation_config`` (a WhisperGenerationConfig or a dict) and keyword fields as pybind's. ``streamer``:
        a callable taking text, a TextStreamer or a StreamerBase, as pybind's (bundled backend; the official C ABI
        takes none, see the module). ``timeout``: seconds before GenerationTimeoutError — the transcription is
        stopped first on the bundled backend; elsewhere (the C ABI cannot) only abandoned, and the pipeline's next
        call waits for it. Ctrl-C likewise.
        """
        generation_config, kwargs = self._call_config(generation_config, kwargs)
        out, effective = self._transcribe(raw_speech_input, generation_config, streamer, timeout, kwargs)
        return self._results(out, effective)

    def stream(self, raw_speech_input: Any, generation_config: Optional[WhisperGenerationConfig] = None, *,
               timeout: Optional[float] = None, **kwargs: Any) -> "TranscriptionStream":
        """Iterate over the transcription's text pieces as they are decoded (the bundled backend; what a callable
        streamer gets). The results (as ``generate()`` returns them) are in ``.result`` once the iterator is done;
        closing it early (``close()``, leaving a ``with`` block, garbage collection) stops the transcription.
        ``timeout`` (seconds, whole call) and Ctrl-C stop it and raise."""
        self._live_state()
        if not self._library.has_extra(STREAMING_EXTRA):
            raise errors.NotSupportedError(f"stream(): {self._no_streaming()}")
        generation_config, kwargs = self._call_config(generation_config, kwargs)
        check_timeout(timeout)
        chunks = ChunkQueue()
        bridge = StreamBridge(chunks.put)
        job, gate, effective = self._start(raw_speech_input, generation_config, bridge, kwargs)
        job.add_done_callback(lambda _j: chunks.put(END))
        deadline = None if timeout is None else time.monotonic() + timeout
        return TranscriptionStream(self, job, gate, bridge, chunks, deadline, timeout, effective)

    async def astream(self, raw_speech_input: Any, generation_config: Optional[WhisperGenerationConfig] = None, *,
                      timeout: Optional[float] = None, **kwargs: Any) -> AsyncIterator[str]:
        """Async iterator of the transcription's text pieces (the bundled backend); cancelling the consuming task
        or closing the iterator early stops the transcription (waited for off the loop). ``timeout`` (seconds,
        whole call) stops it and raises GenerationTimeoutError."""
        self._live_state()
        if not self._library.has_extra(STREAMING_EXTRA):
            raise errors.NotSupportedError(f"astream(): {self._no_streaming()}")
        generation_config, kwargs = self._call_config(generation_config, kwargs)
        check_timeout(timeout)
        import asyncio  # (not at import time, as LLMPipeline.astream)

        loop = asyncio.get_running_loop()
        chunks = AsyncChunkQueue(loop)
        bridge = StreamBridge(chunks.put)
        job, gate, _ = self._start(raw_speech_input, generation_config, bridge, kwargs)
        job.add_done_callback(lambda _j: chunks.put(END))
        deadline = None if timeout is None else loop.time() + timeout
        ended = False
        try:
            while True:
                item = await chunks.get(deadline)
                if item is DEADLINE:
                    ended = True
                    raise await asyncio.shield(asyncio.to_thread(self._timed_out, job, gate, timeout, "astream()"))
                if item is END:
                    ended = True
                    job.result()  # raises what ended the call in C
                    return
                yield item
        finally:
            if not ended:  # cancelled, or closed before its end: stop the transcription, off the loop
                bridge.cancel("closed")
                await asyncio.shield(asyncio.to_thread(self._stop, job, gate))
                job.error = None

    def _call_config(self, generation_config: Any, kwargs: Dict[str, Any]) -> Tuple[Any, Dict[str, Any]]:
        """A call's config arguments as the pipeline takes them (ASRPipeline drops ``context`` here)."""
        return generation_config, kwargs

    def _results(self, out: Any, effective: WhisperGenerationConfig) -> WhisperDecodedResults:
        """The results of one call (its C results and the config it ran with) as openvino_genai returns them."""
        chunks = None if out.chunks is None else [WhisperDecodedResultChunk(*c) for c in out.chunks]
        perf = WhisperPerfMetrics(**base_fields(out.perf), whisper_raw_metrics=stage_durations(out.stages))
        words = None if out.words is None else [WhisperWordTiming(*w) for w in out.words]
        return WhisperDecodedResults(out.texts, out.scores, chunks, perf, self._language(out, effective), words)

    @staticmethod
    def _language(out: Any, config: WhisperGenerationConfig) -> Optional[str]:
        """The result's language as GenAI reports it ("en", "de"): the library's where it tells it (the bundled
        backend's extra), else what needs no detection (upstream's C ABI has no getter): an English-only model's
        "en", the language the config asks for, else None."""
        if out.language:
            return out.language
        if not config.is_multilingual:
            return "en"
        return None if config.language is None else plain_language(config.language)

    def _start(self, raw_speech_input: Any, generation_config: Any, bridge: Optional[StreamBridge],
               kwargs: Dict[str, Any]) -> Tuple[Any, "_CallGate", WhisperGenerationConfig]:
        """Check one call's input and config and queue it to the owner: (its job, its gate, the config it runs
        with)."""
        samples = as_samples(raw_speech_input)
        if samples.size < self._min_samples:
            raise errors.InvalidParameterError(
                f"raw_speech_input is too short for Whisper's feature extractor: {samples.size} samples, more than "
                f"n_fft / 2 = {self._min_samples - 1} needed (upstream: 'raw_speech too short for reflect padding')")
        cfg = self._resolve(generation_config, kwargs)
        values = None if cfg is None else self._c_values(cfg)
        gate = _CallGate()
        job = self._submit(lambda st: gate.run(lambda: native.generate(st.capi, st.handle, samples, values, bridge)))
        return job, gate, cfg or self._config

    def _transcribe(self, raw_speech_input: Any, generation_config: Any, streamer: Any, timeout: Optional[float],
                    kwargs: Dict[str, Any]) -> Tuple[Any, WhisperGenerationConfig]:
        """Run one transcription: the C results and the config it ran with."""
        self._live_state()
        bridge, token_streamer = self._stream_bridge(streamer)
        check_timeout(timeout)
        job, gate, effective = self._start(raw_speech_input, generation_config, bridge, kwargs)
        try:
            finished = job.event.wait(timeout)
        except KeyboardInterrupt:
            raise self._interrupted(job, gate) from None
        if not finished:
            raise self._timed_out(job, gate, timeout)
        out = job.result()
        if bridge is not None and bridge.error is not None:
            raise bridge.error  # the streamer failed: the transcription was stopped there
        if token_streamer is not None:
            token_streamer.end()  # as GenAI, once the transcription is over
        return out, effective

    def _interrupted(self, job: Any, gate: "_CallGate") -> KeyboardInterrupt:
        """Ctrl-C during ``job``: stop it where the library can; the KeyboardInterrupt to raise."""
        if self._stop(job, gate):
            return KeyboardInterrupt("interrupted: the transcription was cancelled")
        return KeyboardInterrupt(f"interrupted: the transcription goes on in C until it ends ({NO_CANCELLATION})")

    def _timed_out(self, job: Any, gate: "_CallGate", timeout: Optional[float],
                   entry: str = "generate()") -> errors.GenerationTimeoutError:
        """``job`` ran out of time: stop it where the library can; the error to raise."""
        if self._stop(job, gate):
            return errors.GenerationTimeoutError(
                f"{entry} exceeded its timeout of {timeout} s; the transcription was cancelled")
        return errors.GenerationTimeoutError(
            f"{entry} exceeded its timeout of {timeout} s; the transcription was NOT stopped "
            f"({NO_CANCELLATION}): it runs to its end on the pipeline's thread, its result is dropped, and the "
            "next call on this pipeline waits for it")

    def _no_streaming(self) -> str:
        return no_streaming_reason(self._library)

    def _stream_bridge(self, streamer: Any) -> Tuple[Optional[StreamBridge], Any]:
        """(the bridge of a streaming call or None, the StreamerBase whose end() closes it) for ``streamer``."""
        if streamer is None:
            return None, None
        if not self._library.has_extra(STREAMING_EXTRA):
            raise errors.NotSupportedError(f"streamer: {self._no_streaming()}: drop the streamer, and the whole "
                                           "transcription is returned at the end")
        on_text, on_tokens, token_streamer = self._check_streamer(streamer)
        return StreamBridge(on_text, on_tokens, tokens_after_stop=True), token_streamer

    def _stop(self, job: Any, gate: _CallGate) -> bool:
        """Stop ``job``'s transcription and wait for its end: False (nothing done) where the library cannot. The
        switch is pulled again until the call ends (a call still queued, or not yet in C, is caught once it is);
        a second Ctrl-C meanwhile abandons the wait."""
        switch, st = self._cancel_switch, self._state
        if switch is None or st is None:
            return False
        while True:
            gate.cancel(st.capi, switch)
            if job.event.wait(CANCEL_POLL_S):
                return True


class TranscriptionStream(Iterator[str]):
    """Iterator over a transcription's text pieces (:meth:`WhisperPipeline.stream`); ``.result`` once it is done;
    a context manager whose exit stops an unfinished transcription."""

    def __init__(self, pipe: WhisperPipeline, job: Any, gate: _CallGate, bridge: StreamBridge, chunks: ChunkQueue,
                 deadline: Optional[float], timeout: Optional[float], config: WhisperGenerationConfig) -> None:
        self._pipe, self._job, self._gate, self._bridge, self._chunks = pipe, job, gate, bridge, chunks
        self._deadline, self._timeout, self._config = deadline, timeout, config
        self._finished = False
        self.result: Optional[WhisperDecodedResults] = None

    def __iter__(self) -> "TranscriptionStream":
        return self

    def __next__(self) -> str:
        if self._finished:
            raise StopIteration
        try:
            item = self._chunks.get(self._deadline)
        except KeyboardInterrupt:
            self._finished = True
            raise self._pipe._interrupted(self._job, self._gate) from None
        if item is DEADLINE:
            self._finished = True
            raise self._pipe._timed_out(self._job, self._gate, self._timeout, "stream()")
        if item is END:
            self._finished = True
            out = self._job.result()
            self.result = self._pipe._results(out, self._config)
            raise StopIteration
        return item

    @property
    def text(self) -> str:
        """The text streamed so far."""
        return self._bridge.text

    def close(self) -> None:
        """Stop the transcription if it is still running and wait until C has let go. Safe to call twice."""
        if self._finished:
            return
        self._finished = True
        self._bridge.cancel("closed")  # (a library without the cancel switch stops at the next piece)
        self._pipe._stop(self._job, self._gate)
        interrupted = self._job.wait_uninterrupted()
        self._job.error = None  # (the cancelled call's error: nobody asked for its result)
        if interrupted:
            raise KeyboardInterrupt

    def __enter__(self) -> "TranscriptionStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._finished and not self._job.event.is_set():
                self._bridge.cancel("garbage-collected")
                switch, st = self._pipe._cancel_switch, self._pipe._state
                if switch is not None and st is not None:
                    self._gate.cancel(st.capi, switch)
        except Exception:
            pass


__all__ = ["STREAMING_EXTRA", "TranscriptionStream", "WhisperPipeline", "check_whisper_folder", "min_samples",
           "missing_functions", "missing_whisper_files", "no_streaming_reason"]
