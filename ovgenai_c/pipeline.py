"""LLMPipeline: a GenAI C pipeline owned by one dedicated native thread."""
from __future__ import annotations

import atexit
import functools
import math
import os
import re
import sys
import threading
import warnings
import weakref
from pathlib import Path
from typing import (TYPE_CHECKING, Any, AsyncIterator, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple,
                    TypeVar, Union, overload)

from . import _capi, _loader, _native_memory, chat as _chat, errors, results as _results
from ._capi import bundled, generation_config as _native_config, llm_pipeline
from .scheduler import scheduler_properties
from ._call import GenerationCall, check_timeout, discard_results
from ._owner import Job, OwnerThread, RelayJob, park_daemon_waiters, park_if_exiting
from ._streaming import DEADLINE, END, AsyncChunkQueue, ChunkQueue, StreamBridge, StreamingStatus
from ._weak_registry import WeakRegistry
from .chat import ChatHistory
from .config import GenerationConfig
from .ir_folder import DESCRIPTION as IR_DESCRIPTION, IR_FILES, missing_ir_files  # noqa: F401 (IR_FILES: tests)
from .special_tokens import folder_eos_token_id
from .results import DecodedResults
from .speculative import DRAFT_MODEL_PROPERTY, DraftModel
from .tokenizer_ir_compat import refuse_crashing_tokenizer

if TYPE_CHECKING:  # pragma: no cover
    from .tokenizer import Tokenizer

Inputs = Union[str, ChatHistory, List[Dict[str, Any]]]
Streamer = Callable[[str], Any]

_DEVICE_RE = re.compile(r"^[A-Z][A-Z0-9_]*(\.[A-Za-z0-9_]+)?(:[A-Za-z0-9_.,()]+)?$")
_PROPERTY_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


def _check_text(value: str, what: str) -> bytes:
    if "\0" in value:
        raise errors.InvalidParameterError(f"{what} contains a NUL character at index {value.index(chr(0))}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise errors.InvalidParameterError(
            f"{what} is not valid Unicode text: {exc.reason} at index {exc.start}") from None


def check_model_path(models_path: Any, with_tokenizer: bool = True) -> str:
    """Check what can be checked before calling in, so the user learns the real cause (``with_tokenizer=False``:
    a folder that needs only the model IR, its tokenizer given as an object)."""
    if not isinstance(models_path, (str, os.PathLike)):
        raise errors.InvalidParameterError(f"models_path must be a str or os.PathLike, not {type(models_path).__name__}")
    path = os.fspath(models_path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    _check_text(path, "models_path")
    p = Path(path)
    if not p.exists():
        raise errors.ModelNotFoundError(f"model path does not exist: {path}")
    if p.is_file():
        if p.suffix == ".gguf":  # both libraries read a GGUF file themselves (GenAI's test: this extension)
            return path
        raise errors.ModelNotFoundError(f"{path} is a file; expected a model folder (OpenVINO IR) or a .gguf file")
    missing = missing_ir_files(p)
    if not with_tokenizer:
        missing = [name for name in missing if name.startswith("openvino_model.")]
    if missing:
        ggufs = sorted(x.name for x in p.glob("*.gguf"))
        hint = f"; the folder holds {ggufs[0]}: pass that file (a GGUF loads too) or convert it" if ggufs else ""
        raise errors.ModelNotFoundError(f"model folder {path} lacks {', '.join(missing)} ({IR_DESCRIPTION}){hint}")
    return path


def property_strings(properties: Dict[str, Any]) -> List[Tuple[str, str]]:
    """OpenVINO properties as (key, value) strings, the form the variadic C create takes."""
    out = []
    for key, value in properties.items():
        if not isinstance(key, str) or not _PROPERTY_KEY_RE.fullmatch(key):
            raise errors.InvalidParameterError(f"property name {key!r} is not a valid OpenVINO property name")
        if isinstance(value, bool):
            text = "YES" if value else "NO"
        elif isinstance(value, (int, str)):
            text = str(value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise errors.InvalidParameterError(f"property {key}: {value} is not a usable value")
            text = repr(value)
        elif isinstance(value, os.PathLike):
            text = os.fspath(value)
        elif (ov_text := _openvino_value_text(value)) is not None:
            text = ov_text
        elif hasattr(value, "name") and hasattr(value, "value"):  # enum-like (e.g. hints)
            text = str(getattr(value, "name"))
        else:
            raise errors.InvalidParameterError(
                f"property {key}: a {type(value).__name__} cannot be passed through the C API (use str, int, float, bool)")
        _check_text(text, f"property {key}")
        out.append((key, text))
    return out


def _openvino_value_text(value: Any) -> Optional[str]:
    """The string form OpenVINO parses for a value of its own Python API (without importing openvino):
    ``ov.Type.f32`` -> "f32", a hint enum (``PerformanceMode.LATENCY``) -> "LATENCY", an ``OVAny`` -> its value."""
    module = type(value).__module__ or ""
    if not module.startswith("openvino"):
        return None
    name = type(value).__name__
    if name == "OVAny":
        inner = value.value
        return None if inner is value else (_openvino_value_text(inner) or property_strings({"v": inner})[0][1])
    if name == "Type" and hasattr(value, "get_type_name"):
        return str(value.get_type_name())
    if hasattr(value, "name") and hasattr(value, "value"):
        return str(value.name)
    return None


# Pipeline properties of openvino_genai that select what the GenAI C API cannot create.
_UNSUPPORTED_PROPERTIES = {
    "draft_model": "speculative decoding (draft_model) needs a draft model object, which the GenAI C API cannot "
                   "pass (the bundled backend takes one: draft_model=ovgenai_c.draft_model(path, device))",
    "prompt_lookup": "prompt-lookup decoding (prompt_lookup=True) is not available through the GenAI C API",
    "adapters": "LoRA adapters cannot be passed through the GenAI C API",
    "structured_output_config": "structured output is not available through the GenAI C API",
}
# Libraries whose create takes `prompt_lookup` as a string property: the bundled backend runs it; the official
# C API hands its properties to the C++ LLMPipeline, which (2026.4) reads the string "YES" as true.
_PROMPT_LOOKUP_KINDS = ("bundled", "official")
_FALSE_VALUES = (False, "NO", "no", "false", "False", 0)
# The bundled backend's own create properties (OVGENAI_C_STATIC_DECODE, the SchedulerConfig keys): another library
# would hand them to OpenVINO, which fails the create without naming why.
_BUNDLED_PREFIX = "OVGENAI_C_"


def _refuse_unsupported_properties(properties: Dict[str, Any], kind: Optional[str]) -> bool:
    """Raise NotSupportedError naming a property the library cannot take; True when prompt lookup is on (its
    property is then left in ``properties``; a false value is dropped). ``kind`` None: a pipeline that has no
    prompt lookup at all (WhisperPipeline)."""
    prompt_lookup = False
    if kind is not None and kind != "bundled":
        for key in properties:
            if isinstance(key, str) and key.startswith(_BUNDLED_PREFIX):
                raise errors.NotSupportedError(f"{key}: a property of ovgenai_c's bundled backend (see native/README.md); "
                                               f"the {kind} library does not take it")
    for key, reason in _UNSUPPORTED_PROPERTIES.items():
        if key in properties:
            value = properties[key]
            if key == "prompt_lookup":
                if value in _FALSE_VALUES:
                    del properties[key]
                    continue
                if kind in _PROMPT_LOOKUP_KINDS:
                    prompt_lookup = True
                    continue
                reason = "prompt-lookup decoding is an LLMPipeline property" if kind is None else \
                    f"prompt-lookup decoding (prompt_lookup=True) is not supported by the {kind} library " \
                         f"(the bundled backend and the official GenAI C library take it)"
            raise errors.NotSupportedError(f"{key}: {reason}")
    return prompt_lookup


class _State:
    """Everything the native side owns for one pipeline; shared by the pipeline, its jobs and its finalizer
    (never referencing the LLMPipeline itself, so a forgotten pipeline can be collected)."""

    def __init__(self, lib: _loader.LoadedLibrary, owner: OwnerThread, native: Any = llm_pipeline) -> None:
        self.lib = lib
        self.native = native  # the _capi module of the pipeline's C header (llm_pipeline or vlm_pipeline)
        self.capi = _capi.bind(lib)
        self.owner = owner
        self.handle: Any = None
        self.closed = False
        self.lock = threading.Lock()
        self.active: Optional[StreamBridge] = None  # bridge of the generate running now
        self.in_chat = False
        self.forked = False  # True in a child process forked after the pipeline was made
        self.history_mode = False  # the last generate outside start_chat() took a ChatHistory
        # start_chat(system_message)'s conversation, kept here (the C API's chat takes no system message): each
        # prompt goes to C as this history plus the prompt, and the turn is kept unless the call was cancelled
        self.system_chat: Optional[ChatHistory] = None
        # the native form of the last per-call config, kept while calls repeat it; freed with the pipeline
        self.config_cache = _native_config.NativeConfigCache()
        # loaders of what this pipeline's results have not read yet, each holding a native object (kept decoded
        # results, llm_pipeline.NativeResults, or a perf metrics copy): closing the pipeline reads them all, so
        # nothing native outlives it; ``native_kind`` of each names its live-handle kind
        self.unread_perf: WeakRegistry[Any] = WeakRegistry()
        # the cffi objects every generate call reuses (made on the owner thread by the first call)
        self.buffers: Any = None
        self.relay_text: Any = None  # the text buffer of the calls made through the owner's relay
        self.relay_job: Any = None  # the relayed call in flight, until it is concluded

    def free_on_owner(self) -> Optional[Job]:
        """Queue the free job and the owner's end; never blocks, never runs C on this thread."""
        with self.lock:
            if self.closed:
                return None
            self.closed = True
        _live_states.discard(self)

        def _free() -> None:
            try:
                for load in self.unread_perf.snapshot():
                    try:
                        load()
                    except Exception:  # a failing read is raised where the values are used
                        pass
            finally:  # (nobody may be waiting for this job: whatever failed above, the pipeline is freed)
                try:
                    self.config_cache.clear(self.capi)
                finally:
                    if self.handle is not None:
                        self.native.free(self.capi, self.handle)
                        self.handle = None

        try:
            job = self.owner.submit(_free)
        except RuntimeError:
            return None
        self.owner.stop()
        return job


_live_states: WeakRegistry[_State] = WeakRegistry()


def _run_if_open(st: _State, fn: Callable[[_State], Any]) -> Any:
    """Run a queued call unless the pipeline was closed while it waited (then it is refused, not run)."""
    if st.closed or st.handle is None:
        raise errors.PipelineClosedError("the pipeline was closed before this call could start")
    return fn(st)


def _finalize(state: _State) -> None:
    """A pipeline dropped unclosed. A finalizer may run inside any Python code of whichever thread collects (PyPy),
    even code holding this state's lock or its owner queue's: it only queues :meth:`_State.free_on_owner` to the
    owner (a put that takes no lock), which then frees the pipeline as close() would."""
    if state.closed:  # (closed, freed or forked: a plain read, no lock)
        return
    try:
        state.owner.put(Job(state.free_on_owner))
    except RuntimeError:  # the owner is stopping or gone: the pipeline was freed already
        pass


def _after_fork_in_child() -> None:
    """A forked child has the parent's pipelines but not their owner threads: they are unusable there.
    Mark them closed (without freeing: the native objects belong to the parent) so calls fail fast."""
    for st in _live_states.snapshot():
        st.lock = threading.Lock()
        st.closed = True
        st.forked = True
        st.handle = None
    _live_states.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def closed_error() -> errors.PipelineClosedError:
    """The error a call on a closed pipeline raises. After the exit hook (which closed it) a daemon thread parks
    instead: it would only take a traceback into the interpreter's teardown (see :func:`_owner.park_if_exiting`)."""
    park_if_exiting()
    return errors.PipelineClosedError("the pipeline is closed")


@atexit.register
def _close_all_at_exit() -> None:
    """Interpreter exit: cancel running generates, free every live pipeline on its owner, join the owners."""
    park_daemon_waiters()  # (the daemon threads those cancellations wake must not run on into the teardown)
    states = _live_states.snapshot()
    for st in states:
        if st.active is not None:
            st.active.cancel("interpreter exit")
    jobs = [(st, st.free_on_owner()) for st in states]
    for st, job in jobs:
        if job is not None:
            job.event.wait(30)
        st.owner.join(5)


class _Input(NamedTuple):
    """One generate call's input, snapshot on the caller's thread: a prompt, a conversation or token ids."""

    prompt: Optional[bytes] = None
    history: Optional[ChatHistory] = None
    ids: Optional[List[int]] = None
    mask: Optional[List[int]] = None
    images: Optional[Tuple[Any, ...]] = None  # VLMPipeline: private uint8 HWC/NHWC arrays
    sequences: int = 1  # the sequences the call's config asks for (a system-message chat keeps the first)


_RESOLVED_MAX = 32  # remembered keyword-argument configs per pipeline (all forgotten when full)
_TOKEN_INPUT_EXTRA = bundled.GENERATE_TOKENS
_TOKEN_STREAMER_EXTRA = bundled.TOKEN_STREAMER
_APPLY_TEMPLATE_EXTRA = bundled.APPLY_CHAT_TEMPLATE
_GET_STRING = "ov_genai_decoded_results_get_string"  # read on the owner after a relayed call (PromptCall)


def _token_rows(inputs: Any) -> Optional[List[Tuple[List[int], Optional[List[int]]]]]:
    """(ids, attention mask) per row of token input — a TokenizedInputs, a tensor or an int array — else None."""
    ids = getattr(inputs, "input_ids", None)
    mask = getattr(inputs, "attention_mask", None)
    if ids is None:
        if isinstance(inputs, (str, bytes, list, ChatHistory)) or not hasattr(inputs, "shape"):
            return None
        ids = inputs

    def rows(t: Any, what: str) -> List[List[int]]:
        import numpy as np

        arr = np.asarray(t.data if hasattr(t, "data") and not isinstance(t, np.ndarray) else t)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.dtype.kind not in "iu":
            raise errors.InvalidParameterError(f"{what} must be a 2-D integer tensor [batch, tokens], got shape "
                                               f"{list(arr.shape)} of {arr.dtype}")
        return [[int(v) for v in row] for row in arr]

    id_rows = rows(ids, "input_ids")
    mask_rows: List[Optional[List[int]]] = [None] * len(id_rows)
    if mask is not None:
        got = rows(mask, "attention_mask")
        if [len(r) for r in got] != [len(r) for r in id_rows]:
            raise errors.InvalidParameterError("attention_mask must have the shape of input_ids")
        mask_rows = list(got)
    return list(zip(id_rows, mask_rows))


_NOT_STREAMABLE = ("GenAI streams only one sequence with greedy or multinomial decoding (not beam search, not "
                   "num_return_sequences > 1)")


CHAT_API_DEPRECATED = ("start_chat() / finish_chat() API is deprecated and will be removed in the next major "
                       "release. Please use generate() with ChatHistory argument.")  # openvino_genai 2026.4's words


def warn_chat_api_deprecated() -> None:
    """The DeprecationWarning openvino_genai 2026.4 gives for start_chat() / finish_chat(), at the caller's line."""
    warnings.warn(CHAT_API_DEPRECATED, DeprecationWarning, stacklevel=3)


def resolve_library(library: Union[None, str, os.PathLike, _loader.LoadedLibrary]) -> _loader.LoadedLibrary:
    """The library a pipeline runs on: the discovered one (None), a loaded one, or the file at a path."""
    if library is None:
        return _loader.get_library()
    if isinstance(library, _loader.LoadedLibrary):
        return library
    return _loader.open_library(os.fspath(library))


_P = TypeVar("_P", bound="OwnedPipeline")


class NotCopyable:
    """A pipeline owns its native object and the thread that runs it: a copy would share them (and lose them when
    the original goes), so copying and pickling are refused, as openvino_genai refuses them."""

    def __copy__(self) -> Any:
        raise TypeError(f"a {type(self).__name__} cannot be copied (it owns a native pipeline and its thread); "
                        "create another one from the same model folder")

    def __deepcopy__(self, memo: Any) -> Any:
        return self.__copy__()

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(f"a {type(self).__name__} cannot be pickled (it owns a native pipeline and its thread)")


class OwnedPipeline(NotCopyable):
    """The life cycle every pipeline shares: a native pipeline (``self._state``, a :class:`_State`) that one owner
    thread creates, runs and frees; ``close()`` (idempotent), context manager, ``closed``, ``owner_thread_id``."""

    _state: Optional[_State]
    models_path: str
    device: str
    _library: _loader.LoadedLibrary

    def close(self) -> None:
        """Free the native pipeline (on its owner thread, after any running call). Safe to call twice."""
        st = self._state
        if st is None or st.forked:
            return
        if st.owner.is_current():
            raise RuntimeError(f"{type(self).__name__}.close() cannot be called from inside its own streamer")
        collect_interrupted = False
        if not st.closed:
            try:
                _native_memory.before_close()
            except KeyboardInterrupt:  # (a Ctrl-C during PyPy's collection: raised once the pipeline is freed)
                collect_interrupted = True
        job = st.free_on_owner()
        if hasattr(self, "_finalizer"):
            self._finalizer.detach()
        interrupted = job.wait_uninterrupted() if job is not None else False
        st.owner.join()
        if interrupted or collect_interrupted:
            raise KeyboardInterrupt

    @property
    def closed(self) -> bool:
        return self._state is None or self._state.closed

    def __enter__(self: _P) -> _P:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<{type(self).__name__} {self.models_path!r} on {self.device} ({state}, {self._library.kind} library)>"

    @property
    def owner_thread_id(self) -> Optional[int]:
        """Native id of the thread that owns the pipeline (creates, runs every call, frees)."""
        return None if self._state is None else self._state.owner.native_id

    def _live_state(self) -> _State:
        st = self._state
        if st is not None and st.forked:
            raise errors.PipelineClosedError(
                "this pipeline was created in the parent process before fork(); create a new one in the child")
        if st is None or st.closed:
            raise closed_error()
        return st

    def _check_streamer(self, streamer: Any) -> Tuple[Optional[Callable[[str], Any]],
                                                      Optional[Callable[[List[int]], Any]], Any]:
        """(text callback, token callback, the StreamerBase whose end() closes the call) for ``streamer``."""
        if streamer is None:
            return None, None, None
        streamers = sys.modules.get(f"{__package__}.streamers")  # only user code that made one imported it
        if streamers is not None and isinstance(streamer, streamers.StreamerBase):
            if isinstance(streamer, streamers.TextParserStreamer):
                # its parsers get each chunk's token ids where the library streams them (the bundled backend),
                # else the library's text chunks (no ids: the C API streams text)
                if self._library.has_extra(_TOKEN_STREAMER_EXTRA):
                    return None, streamer.write_tokens, streamer
                return streamer.write_text, None, None
            if isinstance(streamer, streamers.TextStreamer) and streamer.skip_special_tokens:
                # the library decodes with GenAI's TextStreamer rules already: hand its chunks to the callback
                return streamer.write_text, None, None
            if self._library.has_extra(_TOKEN_STREAMER_EXTRA):  # the bundled backend streams token ids
                return None, lambda ids: streamers.deliver_tokens(streamer, ids), streamer
            raise errors.NotSupportedError(
                f"{type(streamer).__name__} is a token-level streamer (StreamerBase.write gets token ids): the GenAI "
                f"C API streams decoded text only on the {self._library.kind} library; pass a callable taking text, "
                "or a TextStreamer")
        if callable(streamer):
            return streamer, None, None
        raise errors.InvalidParameterError(
            f"streamer must be a callable taking the new text (str), not {type(streamer).__name__}; token-level "
            "StreamerBase objects are not supported by the GenAI C API, which streams text")


class _Form(NamedTuple):
    """What an LLMPipeline constructor call asked for, whichever of openvino_genai's three forms it used."""
    models_path: Any
    device: Any
    config: Any
    properties: Dict[str, Any]
    tokenizer: Any = None
    model: Any = None
    weights: Any = None
    generation_config: Any = None


def _path_form(models_path: Any, device: Any = "CPU", config: Any = None, **properties: Any) -> _Form:
    return _Form(models_path, device, config, properties)


def _tokenizer_form(models_path: Any, tokenizer: Any, device: Any, config: Any = None, **properties: Any) -> _Form:
    return _Form(models_path, device, config, properties, tokenizer=tokenizer)


def _memory_form(model: Any, weights: Any, tokenizer: Any, device: Any, generation_config: Any = None,
                 **properties: Any) -> _Form:
    return _Form(None, device, None, properties, tokenizer=tokenizer, model=model, weights=weights,
                 generation_config=generation_config)


def _looks_like_tokenizer(value: Any) -> bool:
    return type(value).__name__ == "Tokenizer"


def _constructor_form(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> _Form:
    """Bind a constructor call to the form it matches (as pybind picks an overload): a Tokenizer third, or
    ``model`` / ``weights`` by keyword, is the in-memory form; a Tokenizer second, or ``tokenizer`` by keyword, the
    tokenizer form; anything else the folder form."""
    if "model" in kwargs or "weights" in kwargs or (len(args) >= 3 and _looks_like_tokenizer(args[2])):
        return _memory_form(*args, **kwargs)
    if "tokenizer" in kwargs or (len(args) >= 2 and _looks_like_tokenizer(args[1])):
        return _tokenizer_form(*args, **kwargs)
    return _path_form(*args, **kwargs)


def check_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer`` when it is an :class:`~ovgenai_c.Tokenizer` (what a pipeline can stage), else a TypeError."""
    from .tokenizer import Tokenizer

    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be an ovgenai_c.Tokenizer, not {type(tokenizer).__module__}."
                        f"{type(tokenizer).__name__}")
    return tokenizer


class LLMPipeline(OwnedPipeline):
    """A text-generation pipeline over the GenAI C API.

    As openvino_genai's: ``LLMPipeline(models_path, device="CPU", config=None, **properties)``,
    ``LLMPipeline(models_path, tokenizer, device, config=None, **properties)`` (that :class:`Tokenizer` in place of
    the folder's own), or ``LLMPipeline(model, weights, tokenizer, device, generation_config=None, **properties)``
    (the model IR's XML text and weights held in memory). The C API loads a folder, so the last two assemble a
    private one for the load and remove it before returning (``ovgenai_c.model_staging``). Every C call of the
    pipeline runs on its own native thread. Use as a context manager or call :meth:`close`.
    """

    _native: Any = llm_pipeline  # the _capi module of the C header this pipeline runs on
    _decoded_results: Any = DecodedResults  # what generate() returns for decoded text not given as a str
    _draft = False  # made with a draft model (speculative decoding, bundled backend)

    @overload
    def __init__(self, models_path: Union[str, os.PathLike], device: str = "CPU",
                 config: Optional[Dict[str, Any]] = None, *,
                 library: Union[None, str, os.PathLike, _loader.LoadedLibrary] = None, **properties: Any) -> None: ...

    @overload
    def __init__(self, models_path: Union[str, os.PathLike], tokenizer: "Tokenizer", device: str,
                 config: Optional[Dict[str, Any]] = None, *,
                 library: Union[None, str, os.PathLike, _loader.LoadedLibrary] = None, **properties: Any) -> None: ...

    @overload
    def __init__(self, model: str, weights: Any, tokenizer: "Tokenizer", device: str,
                 generation_config: Optional[GenerationConfig] = None, *,
                 library: Union[None, str, os.PathLike, _loader.LoadedLibrary] = None, **properties: Any) -> None: ...

    def __init__(self, *args: Any, library: Union[None, str, os.PathLike, _loader.LoadedLibrary] = None,
                 **kwargs: Any) -> None:
        self._state: Optional[_State] = None
        self._resolved = {}
        self._resolved_base: Optional[GenerationConfig] = None  # the pipeline config self._resolved builds on
        form = _constructor_form(args, kwargs)
        lib = resolve_library(library)
        tokenizer = None if form.tokenizer is None else check_tokenizer(form.tokenizer)
        if form.generation_config is not None and not isinstance(form.generation_config, GenerationConfig):
            raise errors.InvalidParameterError(
                f"generation_config must be a GenerationConfig, not {type(form.generation_config).__name__}")
        staged = None
        if form.model is not None:
            from . import model_staging

            self._check_device_and_config(form.device, form.config)
            staged = model_staging.stage_memory_model(form.model, form.weights, tokenizer)
            shown = "<model in memory>"
        else:
            shown = (self._check_model_path(form.models_path, lib) if tokenizer is None
                     else check_model_path(form.models_path, with_tokenizer=False))
            if tokenizer is not None:
                if not Path(shown).is_dir():
                    raise errors.NotSupportedError(
                        f"{shown} is a GGUF file, which carries its own tokenizer: a Tokenizer object goes with an "
                        "OpenVINO IR folder")
                from . import model_staging

                self._check_device_and_config(form.device, form.config)
                staged = model_staging.stage_for_tokenizer(shown, tokenizer)
        try:
            path = str(staged.path) if staged is not None else shown
            if staged is not None:
                path = self._check_model_path(path, lib)
            try:
                self._open(path, shown, form.device, form.config, form.properties, lib, tokenizer)
            except errors.GenAIError as exc:
                if staged is None:
                    raise
                what = ("the model given in memory" if form.model is not None
                        else f"the model folder {shown} with the given Tokenizer")
                raise staged.renamed(exc, what) from None
            if form.generation_config is not None:
                self.set_generation_config(form.generation_config)
        finally:
            if staged is not None:
                staged.remove()

    @staticmethod
    def _check_device_and_config(device: Any, config: Any) -> None:
        if not isinstance(device, str):
            raise errors.DeviceError(f"device must be a str such as 'CPU', not {type(device).__name__}")
        if not _DEVICE_RE.fullmatch(device):
            raise errors.DeviceError(f"malformed device name {device!r} (expected e.g. 'CPU', 'GPU.0', 'AUTO:GPU,CPU')")
        if config is not None and not isinstance(config, dict):
            raise errors.InvalidParameterError(f"config must be a dict of properties, not {type(config).__name__}")

    def _open(self, path: str, shown: str, device: Any, config: Any, properties: Dict[str, Any],
              lib: _loader.LoadedLibrary, tokenizer: Any) -> None:
        """Create the native pipeline from the folder (or GGUF file) at ``path``; ``shown`` is what the user gave."""
        refuse_crashing_tokenizer(path, lib)  # (a tokenizer IR GenAI <= 2026.3 would die on)
        self._check_device_and_config(device, config)
        merged = {**(config or {}), **properties}
        sched = merged.pop("scheduler_config", None)
        draft = merged.pop("draft_model", None) if lib.kind == "bundled" else None
        self._prompt_lookup = _refuse_unsupported_properties(merged, lib.kind)
        props = property_strings(merged)
        self._draft = draft is not None
        if draft is not None:
            if not isinstance(draft, DraftModel):
                raise errors.InvalidParameterError(
                    f"draft_model must come from ovgenai_c.draft_model(path, device), not a {type(draft).__name__}")
            if self._prompt_lookup:
                raise errors.NotSupportedError("draft_model and prompt_lookup exclude each other: the drafts come "
                                               "from one of them")
            props.append((DRAFT_MODEL_PROPERTY, draft.property_value(device)))
        if sched is not None:  # selects PagedAttention, as in GenAI (ATTENTION_BACKEND=PA wins)
            props = [kv for kv in props if kv[0] != "ATTENTION_BACKEND"] + scheduler_properties(sched, lib.kind)
        self.models_path = shown
        self.device = device
        self.properties = dict(props)
        self._library = lib
        if tokenizer is not None:
            self._tokenizer = tokenizer
        native = self._native
        # a plain generate() reaches the owner through the relay (C to C, no interpreter lock on the hand-offs)
        relayed = native is llm_pipeline
        # (PyPy: pipelines dropped unclosed go first; before the owner thread exists, which a Ctrl-C raised by this
        # collection would otherwise leave behind)
        memory_before = _native_memory.before_create()
        owner = OwnerThread(name=f"ovgenai_c-owner:{Path(shown).name}", relay=relayed,
                            relay_error_source=_capi.bind(lib).relay_error_source() if relayed else None)
        state = _State(lib, owner, native)

        def _create() -> None:
            state.handle = native.create(state.capi, path, device, props)

        job = owner.submit(_create)
        try:
            interrupted = job.wait_uninterrupted()
            job.result()
        except BaseException:
            owner.stop()
            raise
        if interrupted:  # Ctrl-C during the load: let it finish, free it on its owner, then honour the interrupt
            free = state.free_on_owner()
            if free is not None:
                free.wait_uninterrupted()
            owner.join()
            raise KeyboardInterrupt
        self._state = state
        _live_states.add(state)
        self._finalizer = weakref.finalize(self, _finalize, state)
        # at exit, _close_all_at_exit cancels and waits; the finalizer's own atexit run would only queue the free
        self._finalizer.atexit = False
        _native_memory.after_create(memory_before)
        self._config = self._initial_config(path)

    # --- life cycle ----------------------------------------------------------------------------------
    def _check_model_path(self, models_path: Any, lib: _loader.LoadedLibrary) -> str:
        """The model path as a str, checked before calling in (an IR LLM folder, or a GGUF file)."""
        return check_model_path(models_path)

    def _initial_config(self, path: str) -> GenerationConfig:
        """What GenAI's pipeline starts from: the folder's generation_config.json, the eos token from the
        tokenizer when the file sets none, and the library's own max_new_tokens."""
        cfg = GenerationConfig()
        gc_json = Path(path) / "generation_config.json"
        if gc_json.is_file():
            try:
                cfg = GenerationConfig(gc_json)
            except errors.GenAIError:
                cfg = GenerationConfig()
        # a GGUF file keeps its tokenizer inside: the library knows its eos, Python does not
        self._eos_unknown = not Path(path).is_dir()
        if cfg.eos_token_id == -1 and not self._eos_unknown:
            # the tokenizer's eos, read from the folder's files alone (building a Tokenizer would import numpy,
            # which a re-initialised embedded interpreter cannot load again)
            eos = self._tokenizer.get_eos_token_id() if getattr(self, "_tokenizer", None) is not None else \
                folder_eos_token_id(Path(path))
            if eos >= 0:
                cfg.set_eos_token_id(eos)
        try:
            native_max = self._call(self._native_max_new_tokens)
            cfg.max_new_tokens = native_max
        except errors.GenAIError:
            pass
        return cfg

    def _native_max_new_tokens(self, st: _State) -> int:
        return st.native.max_new_tokens(st.capi, st.handle)

    # --- running jobs --------------------------------------------------------------------------------

    def _submit(self, fn: Callable[[_State], Any]) -> Tuple[_State, Job]:
        st = self._live_state()
        return st, self._put(st, Job(lambda: _run_if_open(st, fn)))

    @staticmethod
    def _put(st: _State, job: Job) -> Job:
        """Queue ``job`` to the pipeline's owner (refused from the owner itself, or once the pipeline is closed)."""
        if st.owner.is_current():
            raise RuntimeError("re-entrant call: a streamer must not call its own pipeline")
        with st.lock:
            if not st.closed:
                try:
                    st.owner.put(job)
                except RuntimeError:
                    raise errors.PipelineClosedError("the pipeline's owner thread is gone") from None
                return job
        raise closed_error()  # (outside the lock: at exit a daemon thread parks in it)

    def _call(self, fn: Callable[[_State], Any]) -> Any:
        _, job = self._submit(fn)
        return job.wait()

    # --- chat and config ----------------------------------------------------------------------------
    def start_chat(self, system_message: str = "") -> None:
        """Start a chat: later generate() calls see the previous turns; ``system_message`` goes first, as GenAI's
        (the C API's chat takes none: the conversation is then kept here and each prompt goes to C with it, as a
        history, the turn kept unless the call was cancelled). Deprecated as in openvino_genai 2026.4 (its
        DeprecationWarning): pass a ChatHistory to generate()."""
        warn_chat_api_deprecated()
        if not isinstance(system_message, str):
            raise TypeError(f"system_message must be a str, not {type(system_message).__name__}")
        if system_message:
            _check_text(system_message, "the system message")
            if self._native is not llm_pipeline:
                raise errors.NotSupportedError(
                    f"{type(self).__name__}.start_chat(system_message) is not available through the GenAI C API (its "
                    "chat takes no system message, and a history sent instead would lose the earlier turns' images); "
                    "start_chat() without one, or pass a ChatHistory with a system message to generate()")

        def _start(st: _State) -> None:
            if st.history_mode:
                st.native.finish_chat(st.capi, st.handle)
                st.history_mode = False
            if system_message:  # the conversation is kept here and sent as a history each turn
                if st.in_chat and st.system_chat is None:  # a C chat's turns end (GenAI's restart, with the message)
                    st.native.finish_chat(st.capi, st.handle)
                st.system_chat = ChatHistory([{"role": "system", "content": system_message}])
            else:
                st.system_chat = None
                st.native.start_chat(st.capi, st.handle)
            st.in_chat = True

        self._call(_start)

    def finish_chat(self) -> None:
        """End the chat and forget its history (deprecated as :meth:`start_chat`)."""
        warn_chat_api_deprecated()

        def _finish(st: _State) -> None:
            st.native.finish_chat(st.capi, st.handle)
            st.in_chat = False
            st.history_mode = False
            st.system_chat = None

        self._call(_finish)

    def get_tokenizer(self) -> Any:
        """The model's :class:`~ovgenai_c.Tokenizer` (made once per pipeline; runs through libopenvino_c)."""
        tok = getattr(self, "_tokenizer", None)
        if tok is None:
            from .tokenizer import Tokenizer

            if Path(self.models_path).is_dir():
                tok = Tokenizer(self.models_path)
            elif self._library.has_extra(bundled.CONVERT_GGUF):  # the tokenizer the GGUF carries, as IR
                from . import gguf_ir

                tok = gguf_ir.gguf_tokenizer(self.models_path, self._library)
            else:
                raise errors.NotSupportedError(
                    f"get_tokenizer() on a GGUF file ({self.models_path}) needs the bundled backend, which writes "
                    f"the tokenizer the file carries as IR; the {self._library.kind} library keeps it inside (convert "
                    "the file with `ovgenai-c convert` and pass the folder)")
            self._tokenizer = tok
        return tok

    def get_generation_config(self) -> GenerationConfig:
        """A copy of the pipeline's generation config."""
        self._live_state()
        return self._config.copy()

    def set_generation_config(self, config: GenerationConfig) -> None:
        """Replace the pipeline's generation config (validated first)."""
        if not isinstance(config, GenerationConfig):
            raise errors.InvalidParameterError(f"expected a GenerationConfig, not {type(config).__name__}")
        cfg = self._with_model_defaults(config.copy())
        self._check_expressible(cfg)
        cfg.validate(eos_from_model=self._eos_unknown)

        self._call(lambda st: st.native.set_generation_config(st.capi, st.handle, cfg))
        self._config = cfg

    # --- generation ----------------------------------------------------------------------------------
    _resolved: Dict[Any, GenerationConfig]  # keyword arguments -> their checked config (over self._config)

    def _resolve_config(self, generation_config: Optional[GenerationConfig], kwargs: Dict[str, Any]
                        ) -> Tuple[Optional[GenerationConfig], GenerationConfig]:
        """(config to send — None means the pipeline's own —, effective config for checks). Without a
        GenerationConfig argument the checked result is remembered per set of keyword arguments (the pipeline's
        own config is private, replaced only by set_generation_config, which forgets them): a repeated call
        resolves and validates nothing. The remembered configs are never changed after they are made."""
        if generation_config is not None and not isinstance(generation_config, GenerationConfig):
            if isinstance(generation_config, dict):
                kwargs = {**generation_config, **kwargs}
                generation_config = None
            else:
                raise errors.InvalidParameterError(
                    f"generation_config must be a GenerationConfig, not {type(generation_config).__name__}")
        if generation_config is not None:
            return self._resolve_uncached(generation_config, kwargs)
        if self._resolved_base is not self._config:
            self._resolved.clear()
            self._resolved_base = self._config
        try:  # the value's type is part of the key: 1 == True == 1.0, but a field may accept only one of them
            values = tuple(kwargs.values())
            key: Any = (tuple(kwargs), values, tuple(map(type, values)))  # (no generator: this runs on every call)
            hit = self._resolved.get(key)
        except TypeError:  # an unhashable value (e.g. a list of stop strings)
            return self._resolve_uncached(None, kwargs)
        if hit is None:
            send, hit = self._resolve_uncached(None, kwargs)
            if len(self._resolved) >= _RESOLVED_MAX:
                self._resolved.clear()
            self._resolved[key] = hit
        return (hit if kwargs else None), hit

    def _resolve_uncached(self, generation_config: Optional[GenerationConfig], kwargs: Dict[str, Any]
                          ) -> Tuple[Optional[GenerationConfig], GenerationConfig]:
        if generation_config is None and not kwargs:
            effective = self._config
            send = None
        else:
            send = (generation_config or self._config).copy()
            # as pybind, every call's config goes through update_generation_config, keywords or none: a set
            # eos_token_id (e.g. by assignment) is then also a stop token
            send.update_generation_config(**kwargs)
            effective = send = self._with_model_defaults(send)
        self._check_expressible(effective)
        effective.validate(eos_from_model=self._eos_unknown)
        return send, effective

    def _with_model_defaults(self, cfg: GenerationConfig) -> GenerationConfig:
        """As GenAI resolves a config: empty stop_token_ids and an unset eos come from the pipeline's own."""
        base = self._config
        if not cfg.stop_token_ids:
            cfg.stop_token_ids = base.stop_token_ids
        if cfg.eos_token_id == -1 and base.eos_token_id != -1:
            cfg.set_eos_token_id(base.eos_token_id)
        return cfg

    def _check_expressible(self, cfg: GenerationConfig) -> None:
        """Refuse, by name, what neither the C ABI nor the loaded library can carry."""
        unsupported = cfg.unsupported_fields()
        if unsupported:
            raise errors.NotSupportedError(
                f"GenerationConfig field(s) {', '.join(unsupported)} cannot be passed through the GenAI C API")
        if self._prompt_lookup and not cfg.is_prompt_lookup():
            raise errors.ConfigError(  # what GenAI's prompt-lookup pipeline asserts for every request
                "`max_ngram_size` && `num_assistant_tokens` should be specified for `prompt lookup decoding` (the "
                "pipeline was created with prompt_lookup=True)")
        if self._draft and (cfg.is_beam_search() or cfg.num_return_sequences != 1):
            raise errors.ConfigError("Beam search and parallel sampling are not compatible with assistant generation "
                                     "(the pipeline has a draft model)")
        if cfg.is_assisting_generation() and not self._draft and not (self._prompt_lookup and cfg.is_prompt_lookup()):
            raise errors.NotSupportedError(
                "assisted generation (num_assistant_tokens / assistant_confidence_threshold: prompt lookup or a "
                "draft model) is not available through the GenAI C API on this pipeline; prompt lookup needs "
                "LLMPipeline(..., prompt_lookup=True) with num_assistant_tokens and max_ngram_size")
        if not cfg.apply_chat_template and not self._library.has_extra(_APPLY_TEMPLATE_EXTRA):
            raise errors.NotSupportedError("apply_chat_template=False cannot be expressed through the GenAI C API "
                                           f"(it has no setter; templating is always on) on the {self._library.kind} "
                                           "library; the bundled backend takes it")

    def _prepare_inputs(self, inputs: Inputs) -> _Input:
        if isinstance(inputs, _Input):  # a row of a token batch, taken apart (and checked) by the batch
            return inputs
        if isinstance(inputs, str):
            return _Input(prompt=_check_text(inputs, "the prompt"))
        if isinstance(inputs, (ChatHistory, list)):
            if isinstance(inputs, list) and inputs and all(isinstance(x, str) for x in inputs):
                raise errors.NotSupportedError(
                    "a list of prompts can be passed to generate(), not to stream()/astream(): stream one prompt")
            history = _chat.as_chat_history(inputs)
            if history.empty():
                raise errors.InvalidParameterError("empty input: give a prompt, a list of prompts or a chat history with "
                                                   "at least one message")
            # snapshot, so later changes by the caller don't race the owner thread
            return _Input(history=history.copy())
        token_rows = _token_rows(inputs)
        if token_rows is not None:
            if len(token_rows) != 1:
                raise errors.NotSupportedError("stream()/astream() take one row of token ids; generate() takes a batch")
            self._check_token_input()
            (ids, mask), = token_rows
            return _Input(ids=ids, mask=mask)
        if isinstance(inputs, bytes):
            raise errors.InvalidParameterError("the prompt must be a str, not bytes (decode it first)")
        raise errors.InvalidParameterError(
            f"inputs must be a str, a ChatHistory, a list of message dicts or token ids (TokenizedInputs), not "
            f"{type(inputs).__name__}")

    def _check_token_input(self) -> None:
        if not self._library.has_extra(_TOKEN_INPUT_EXTRA):
            raise errors.NotSupportedError(
                f"token input (TokenizedInputs / input_ids) cannot pass through the GenAI C API, which takes text, "
                f"on the {self._library.kind} library; the bundled backend takes it (or decode the ids and pass text)")

    def _run_generate(self, st: _State, request: _Input, send: Optional[GenerationConfig], bridge: StreamBridge,
                      streamable: bool = True, want_text: bool = True) -> llm_pipeline.Generated:
        """Runs on the owner thread. ``streamable``: install the callback (GenAI refuses any streamer, even
        one that only watches for cancellation, with beam search or num_return_sequences > 1). Without
        ``want_text`` a library that can (the bundled one) calls it for cancellation only, skipping the
        per-token detokenisation."""
        token_streamer = bridge.on_tokens is not None
        cancel_only = streamable and not want_text and not token_streamer
        if request.history is None and st.history_mode and not st.in_chat:
            # The stateful (SDPA) path of upstream keeps a history call's chat state and then refuses a plain
            # prompt; its default path does not. Outside start_chat() both kinds of input are independent calls,
            # so end that state first (what finish_chat() is for).
            st.native.finish_chat(st.capi, st.handle)
            st.history_mode = False
        if request.history is not None and not st.in_chat:
            st.history_mode = True
        turn = None
        if st.system_chat is not None and request.prompt is not None:
            turn = {"role": "user", "content": request.prompt.decode("utf-8")}
            history = st.system_chat.copy()
            history.append(turn)
            request = _Input(history=history, sequences=request.sequences)  # (a prompt has nothing else)
        native = st.native
        if request.images is not None:
            extra: Dict[str, Any] = {"images": request.images}
        elif hasattr(native, "CallBuffers"):
            if st.buffers is None:
                st.buffers = native.CallBuffers(st.capi.ffi)
            extra = {"buffers": st.buffers}
        else:
            extra = {}
        st.active = bridge
        try:
            out = native.generate(st.capi, st.handle, send, bridge, streamable=streamable,
                                  cancel_only=cancel_only, prompt=request.prompt, history=request.history,
                                  ids=request.ids, mask=request.mask, config_cache=st.config_cache, **extra)
        finally:
            st.active = None
        if turn is not None and out is not None and bridge.returned != StreamingStatus.CANCEL and bridge.error is None:
            texts, _ = _results.split_results_string(out.text, request.sequences, out.scores)
            st.system_chat.append(turn)
            st.system_chat.append({"role": "assistant", "content": texts[0]})
        if out is None:
            return llm_pipeline.Generated(bridge.text, None)
        load = out.native if out.native is not None else _results.unread_loader(out.perf)
        if load is not None:
            st.unread_perf.add(load)
        return out

    def _start_generate(self, inputs: Inputs, generation_config: Optional[GenerationConfig],
                        on_text: Optional[Callable[[str], Any]], kwargs: Dict[str, Any],
                        timeout: Optional[float] = None, on_tokens: Optional[Callable[[List[int]], Any]] = None,
                        entry: str = "generate()") -> GenerationCall:
        """Check everything, then submit the call to the owner thread (nothing is submitted if a check fails)."""
        if type(inputs) is str:  # (the common case: its _Input is made only if the call goes as a Python job)
            request: Optional[_Input] = None
            prompt: Optional[bytes] = _check_text(inputs, "the prompt")
        else:
            request = self._prepare_inputs(inputs)
            prompt = request.prompt
        send, effective = self._resolve_config(generation_config, kwargs)
        streamable = effective.streams_one_sequence()  # whether GenAI accepts a streamer with this config
        if (on_text is not None or on_tokens is not None) and not streamable:
            raise errors.NotSupportedError(_NOT_STREAMABLE + ": generate without a streamer, or ask for one "
                                           "sequence")
        if timeout is not None and not streamable:
            raise errors.NotSupportedError(_NOT_STREAMABLE + ", and a timeout cancels through that callback: "
                                           "generate without timeout=, or ask for one sequence")
        # the streamed text is read by a user streamer, or carried by a timeout's error as the partial text
        want_text = on_text is not None or timeout is not None
        if streamable and not want_text and on_tokens is None and self._library.kind == "official":
            # GenAI detokenises every token for any streamer, a cancel check included (6-8 % of the time per token
            # measured): a call nobody streams and no deadline watches runs without one, as pybind's generate
            # does — Ctrl-C, close() and exit then wait for its end (GenerationCall.wait says so)
            streamable = False
        bridge = StreamBridge(on_text, on_tokens)
        call = GenerationCall(bridge, effective, timeout, entry, cancellable=streamable)
        call.decoded_class = self._decoded_results
        st = self._live_state()
        _native_memory.reclaim_abandoned(st.active is not None)  # (PyPy: a dropped stream cancels first)
        if st.owner.relay is not None and on_text is None and on_tokens is None and prompt is not None:
            job = self._relay_generate(st, prompt, send, bridge, streamable, streamable and not want_text)
            if job is not None:
                call.job = job  # type: ignore[assignment]
                return call
        if request is None:
            request = _Input(prompt=prompt)
        if st.system_chat is not None and request.prompt is not None:
            if effective.echo:  # (as in a C chat: the bundled engine refuses it there by the same words)
                raise errors.InvalidParameterError("echo is not supported in a chat (start_chat): the history keeps "
                                                   "answers only")
            request = _Input(prompt=request.prompt, sequences=effective.expected_sequences())
        call.job = self._put(st, Job(functools.partial(self._generate_job, st, request, send, bridge, streamable,
                                                       want_text)))
        return call

    def _relay_generate(self, st: _State, prompt: bytes, send: Optional[GenerationConfig], bridge: StreamBridge,
                        streamable: bool, cancel_only: bool) -> Optional[RelayJob]:
        """A prompt call whose text only the results carry, posted to the owner through its relay: made ready here,
        run there by C, concluded back here (no Python job, no interpreter lock on either hand-off). None when the
        owner is not idle (something else is queued or running) or the call needs owner-side work first — then it
        goes as a Python job."""
        buffers = st.buffers
        if buffers is None or st.history_mode or st.system_chat is not None or (buffers.cancel_only_on != cancel_only
                                                  and st.capi.has(bundled.CANCEL_ONLY_STREAMING)):
            return None  # (the first call makes the buffers; the others switch per-thread state on the owner)
        fn = st.capi.relay_fn("ov_genai_llm_pipeline_generate")
        if fn is None:
            return None
        if st.owner.is_current():
            raise RuntimeError("re-entrant call: a streamer must not call its own pipeline")
        relay = st.owner.relay
        stale = st.relay_job
        if stale is not None and stale.done():
            # a relayed call nobody waited for (an interrupt right after its post): conclude it to free its slot; its
            # outcome is nobody's (Job.wait would raise its failure into this unrelated call)
            stale.event.wait(0)
        with st.lock:  # close() marks the state closed under this lock before it queues the free
            closed = st.closed
            if not closed and (st.handle is None or not relay.reserve()):
                return None
        if closed:
            raise closed_error()  # (outside the lock: at exit a daemon thread parks in it)
        # The slot is ours and the owner waits in the relay: nothing else touches the pipeline's config cache or
        # buffers until this call has been concluded.
        prepared: Any = None

        def conclude(status: int, error_text: Optional[str]) -> llm_pipeline.Generated:
            st.active = None
            if st.relay_job is job:
                st.relay_job = None
            out = prepared.conclude(status, error_text)
            if out is None:
                return llm_pipeline.Generated(bridge.text, None)
            if out.native is not None:
                st.unread_perf.add(out.native)
                if st.closed:  # the pipeline was closed meanwhile (its free read what it found): read these now
                    try:
                        out.native()
                    except Exception:  # raised again where the values are used
                        pass
            return out

        try:
            if st.relay_text is None:
                st.relay_text = llm_pipeline.TextBuffer(st.capi.ffi)
            prepared = llm_pipeline.PromptCall(st.capi, st.handle, prompt, send, bridge, streamable=streamable,
                                               cancel_only=cancel_only, config_cache=st.config_cache,
                                               buffers=buffers, text=st.relay_text,
                                               reader=st.capi.relay_fn(_GET_STRING, "ovgenai_relay_reader_fn"))
            job = RelayJob(relay, conclude)
            # kept by the pipeline until concluded: an interrupt (Ctrl-C) landing after the post cannot free what C
            # is using, and the next call collects it
            st.relay_job = job
            st.active = bridge
            prepared.post(relay, fn)
        except BaseException:
            relay.unreserve()  # (nothing once posted: then st.relay_job holds the call until it is collected)
            raise
        return job

    def _generate_job(self, st: _State, *args: Any) -> llm_pipeline.Generated:
        """The owner's job of a generate call: :meth:`_run_generate` unless the pipeline was closed meanwhile."""
        if st.closed or st.handle is None:
            raise errors.PipelineClosedError("the pipeline was closed before this call could start")
        return self._run_generate(st, *args)

    def generate(self, inputs: Inputs, generation_config: Optional[GenerationConfig] = None,
                 streamer: Optional[Streamer] = None, *, timeout: Optional[float] = None,
                 **kwargs: Any) -> DecodedResults:
        """Generate an answer for a prompt (str) or a conversation (ChatHistory / list of message dicts).

        ``streamer(text)`` gets each new piece of text and may return None/False (go on), True or
        ``StreamingStatus.STOP`` (stop) or ``StreamingStatus.CANCEL`` (stop and drop the chat turn).
        ``timeout`` (seconds) cancels natively and raises :class:`GenerationTimeoutError`. Extra keyword
        arguments set GenerationConfig fields for this call.
        """
        if type(inputs) is str and streamer is None and timeout is None:  # the common call, checked as below
            return self._generate_one(inputs, generation_config, None, None, None, kwargs, True, False)
        on_text, on_tokens, token_streamer = self._check_streamer(streamer)
        check_timeout(timeout)
        if isinstance(inputs, list) and inputs and all(isinstance(x, str) for x in inputs):
            return self._generate_batch(inputs, generation_config, streamer, timeout, kwargs)
        rows = _token_rows(inputs)
        if rows is not None and len(rows) > 1:
            return self._generate_token_batch(rows, generation_config, streamer, timeout, kwargs)
        if isinstance(inputs, _Input):
            inputs, rows = inputs, []
        streamers = sys.modules.get(f"{__package__}.streamers")
        parser_streamer = streamer if streamers is not None and isinstance(streamer, streamers.TextParserStreamer) \
            else None
        return self._generate_one(inputs, generation_config, on_text, on_tokens, timeout, kwargs,
                                  as_text=isinstance(inputs, str), encoded=rows is not None,
                                  token_streamer=token_streamer, parser_streamer=parser_streamer)

    __call__ = generate

    def _generate_one(self, inputs: Any, generation_config: Optional[GenerationConfig],
                      on_text: Optional[Callable[[str], Any]], on_tokens: Optional[Callable[[List[int]], Any]],
                      timeout: Optional[float], kwargs: Dict[str, Any], as_text: bool, encoded: bool,
                      token_streamer: Any = None, parser_streamer: Any = None) -> Any:
        if parser_streamer is not None:
            parser_streamer.reset()  # as GenAI: each generation's parsed message starts anew
        call = self._start_generate(inputs, generation_config, on_text, kwargs, timeout, on_tokens)
        call.parser_streamer = parser_streamer
        call.wait()
        result = call.outcome(as_text, encoded)
        if token_streamer is not None:
            token_streamer.end()  # as GenAI, once the generation is over
        return call.parsed(result)

    def _generate_token_batch(self, rows: List[Tuple[List[int], Optional[List[int]]]],
                              generation_config: Optional[GenerationConfig], streamer: Any, timeout: Optional[float],
                              kwargs: Dict[str, Any]) -> Any:
        """Several rows of token ids: one after the other (one sequence per C call), results concatenated."""
        if streamer is not None:
            raise errors.NotSupportedError("a streamer can be used with one row of token ids at a time, not a batch")
        self._check_token_input()
        self._resolve_config(generation_config, dict(kwargs))
        parts = [self.generate(_Input(ids=ids, mask=mask), generation_config, timeout=timeout, **kwargs)
                 for ids, mask in rows]
        perf = parts[0].perf_metrics
        for r in parts[1:]:
            perf = perf + r.perf_metrics
        return _results.EncodedResults([t for r in parts for t in r.tokens], [x for r in parts for x in r.scores],
                                       perf, [int(f) for r in parts for f in r.finish_reasons])

    def _generate_batch(self, prompts: List[str], generation_config: Optional[GenerationConfig],
                        streamer: Any, timeout: Optional[float], kwargs: Dict[str, Any]) -> DecodedResults:
        """A list of prompts, as openvino_genai accepts: run one after the other (the C API takes one prompt)."""
        if streamer is not None and len(prompts) > 1:
            raise errors.NotSupportedError("a streamer can be used with one prompt at a time, not a batch")
        for i, p in enumerate(prompts):  # refuse a bad prompt before generating for the good ones
            _check_text(p, f"prompt {i}")
        self._resolve_config(generation_config, dict(kwargs))
        parts = [self.generate(p, generation_config, streamer, timeout=timeout, **kwargs) for p in prompts]
        perf = parts[0].perf_metrics
        for r in parts[1:]:
            perf = perf + r.perf_metrics
        merged = DecodedResults(texts=[t for r in parts for t in r.texts], scores=[x for r in parts for x in r.scores],
                                perf_metrics=perf, finish_reason=parts[-1].finish_reason,
                                finish_reasons=[int(f) for r in parts for f in r.finish_reasons])
        merged.set_parsed([m for r in parts for m in r.parsed])
        return merged

    def stream(self, inputs: Inputs, generation_config: Optional[GenerationConfig] = None, *,
               timeout: Optional[float] = None, **kwargs: Any) -> "TextStream":
        """Iterate over the answer's text pieces as they are generated.

        Closing the iterator early (``close()``, ``break`` in a ``with`` block, garbage collection) cancels
        natively and waits until C has let go. The full result is in ``.result`` once the iterator is done.
        """
        check_timeout(timeout)
        chunks = ChunkQueue()
        call = self._start_generate(inputs, generation_config, chunks.put, kwargs, timeout, entry="stream()")
        call.job.add_done_callback(lambda _j: chunks.put(END))
        return TextStream(call, chunks, as_text=isinstance(inputs, str))

    async def astream(self, inputs: Inputs, generation_config: Optional[GenerationConfig] = None, *,
                      timeout: Optional[float] = None, **kwargs: Any) -> AsyncIterator[str]:
        """Async iterator of text pieces; cancelling the consuming task cancels generation natively.
        ``timeout`` (seconds, whole call) cancels natively and raises GenerationTimeoutError."""
        check_timeout(timeout)
        import asyncio  # (not at import time: a program that never streams asynchronously does not pay for it)

        loop = asyncio.get_running_loop()
        chunks = AsyncChunkQueue(loop)
        call = self._start_generate(inputs, generation_config, chunks.put, kwargs, timeout, entry="astream()")
        deadline = None if call.deadline is None else loop.time() + (call.left() or 0.0)
        done = loop.create_future()

        def _set_done() -> None:
            if not done.done():
                done.set_result(None)

        def _done(_j: Job) -> None:
            chunks.put(END)
            try:
                loop.call_soon_threadsafe(_set_done)
            except RuntimeError:  # loop closed
                pass

        call.job.add_done_callback(_done)
        try:
            while True:
                item = await chunks.get(deadline)
                if item is DEADLINE:
                    call.cancel("timeout")
                    await asyncio.shield(done)
                    break
                if item is END:
                    break
                yield item
        except BaseException:
            call.cancel("cancelled")
            if not call.done():
                await asyncio.shield(done)
            discard_results(call.job)
            raise
        finally:
            if not call.done():
                call.cancel("closed")
                await asyncio.shield(done)
        call.outcome()  # raises what ended the call (the deadline, the streamer's or C's error)


class TextStream(Iterator[str]):
    """Iterator over generated text pieces; a context manager whose exit cancels an unfinished generation."""

    def __init__(self, call: GenerationCall, chunks: ChunkQueue, as_text: bool = False) -> None:
        self._call = call
        self._chunks = chunks
        self._as_text = as_text
        self._finished = False
        self.result: Optional[DecodedResults] = None

    def __iter__(self) -> "TextStream":
        return self

    def __next__(self) -> str:
        if self._finished:
            raise StopIteration
        call = self._call
        try:
            item = self._chunks.get(call.deadline)
        except KeyboardInterrupt:
            call.cancel("interrupt")
            call.job.wait_uninterrupted()
            self._finished = True
            discard_results(call.job)
            raise
        if item is DEADLINE:
            self._finished = True
            call.expire()
            call.outcome()  # raises GenerationTimeoutError (or C's own error meanwhile)
        if item is END:
            self._finished = True
            self.result = call.parsed(call.outcome(self._as_text))
            raise StopIteration
        return item

    def cancel(self) -> None:
        """Cancel natively and wait until the C call has returned."""
        if not self._call.done():
            self._call.cancel("closed")
        self._finished = True
        self._call.finish_waiting()
        # (the results are not discarded here: another thread's __next__ may be taking them — close() from
        # another thread while one iterates; they go with the stream)

    def close(self) -> None:
        """Stop early (cancels natively, waits for C). Safe to call twice."""
        if not self._finished:
            self.cancel()

    @property
    def text(self) -> str:
        """The text streamed so far."""
        return self._call.bridge.text

    def __enter__(self) -> "TextStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._finished and not self._call.done():
                self._call.cancel("garbage-collected")
        except Exception:
            pass
