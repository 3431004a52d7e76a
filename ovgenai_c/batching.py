"""ContinuousBatchingPipeline: openvino_genai's continuous-batching subset over the bundled backend's batching extra
(cdefs/93). Concurrent requests share the decode steps of one PagedAttention model.

The native pipeline owns one thread that runs the step loop from creation to :meth:`close`; the calls here (add a
request, read, cancel) only queue or copy under the native locks, so they may come from any thread. Waits block in
native slices of :data:`WAIT_SLICE_MS`, so Ctrl-C interrupts them (and cancels what the call started). The official
GenAI C library has no such ABI: on it the class refuses with NotSupportedError.
"""
from __future__ import annotations

import asyncio
import enum
import os
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _native_memory, errors
from ._capi import batching as native
from ._capi import bind
from ._capi.chat_history import materialise as native_history
from ._capi.generation_config import native as native_config
from ._step_events import StepEvents
from .chat import ChatHistory
from .config import GenerationConfig
from .pipeline import (NotCopyable, check_model_path, check_tokenizer, property_strings, resolve_library,
                       warn_chat_api_deprecated)
from .results import GenerationFinishReason, PerfMetrics, measured_perf_metrics
from .scheduler import SchedulerConfig, scheduler_properties

WAIT_SLICE_MS = 100


class GenerationStatus(enum.IntEnum):
    """``openvino_genai.GenerationStatus``."""

    RUNNING = 0
    FINISHED = 1
    IGNORED = 2
    CANCEL = 3
    STOP = 4


@dataclass
class GenerationOutput:
    """New (``read``) or all (``read_all``) generated ids of a sequence, as ``openvino_genai.GenerationOutput``."""

    generated_ids: List[int] = field(default_factory=list)
    generated_log_probs: List[float] = field(default_factory=list)
    score: float = 0.0
    finish_reason: GenerationFinishReason = GenerationFinishReason.NONE


@dataclass
class GenerationResult:
    """One request's result, as ``openvino_genai.GenerationResult`` (texts in ``m_generation_ids``)."""

    m_request_id: int = 0
    m_generation_ids: List[str] = field(default_factory=list)
    m_scores: List[float] = field(default_factory=list)
    m_status: GenerationStatus = GenerationStatus.RUNNING
    finish_reasons: List[GenerationFinishReason] = field(default_factory=list)
    tokens: List[List[int]] = field(default_factory=list)  # ours: the generated ids of each sequence
    num_input_tokens: int = 0  # ours: the prompt's tokens
    # generate()'s, as GenAI's: the batch's TTFT, TPOT, throughput and duration (measured around the call), its
    # generated tokens, this request's prompt tokens; empty for a handle's own result()
    perf_metrics: PerfMetrics = field(default_factory=PerfMetrics)
    extended_perf_metrics: Any = None  # (GenAI's: speculative decoding's only, None here as there)

    def get_generation_ids(self) -> List[str]:
        return list(self.m_generation_ids)


def _free_handle(capi: Any, handle: Any) -> None:
    native.free_handle(capi, handle)


class GenerationHandle:
    """A queued request (``openvino_genai.GenerationHandle``): read its tokens as they come, cancel or stop it.
    Freed natively when garbage-collected or on :meth:`close` (a running request is then cancelled)."""

    def __init__(self, pipe: "ContinuousBatchingPipeline", handle: Any, request_id: int) -> None:
        self._capi = pipe._capi
        self._handle = handle
        self.request_id = request_id
        self._events: Optional[StepEvents] = pipe._events
        self._text_buf: Any = None
        self._finalizer = weakref.finalize(self, _free_handle, self._capi, handle)

    def _live(self) -> Any:
        if not self._finalizer.alive:
            raise errors.PipelineClosedError("the generation handle is closed")
        return self._handle

    def close(self) -> None:
        """Free the native handle (cancelling the request if it still runs). Safe to call twice."""
        self._finalizer()

    def __enter__(self) -> "GenerationHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def get_status(self) -> GenerationStatus:
        return GenerationStatus(native.status(self._capi, self._live()))

    def can_read(self) -> bool:
        """Whether :meth:`read` has new tokens right now."""
        return native.unread(self._capi, self._live()) > 0

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until there is something to read or the request ended (True), or ``timeout`` seconds passed."""
        handle = self._live()
        if timeout is not None:
            return native.wait(self._capi, handle, max(0, int(timeout * 1000)))
        while not native.wait(self._capi, handle, WAIT_SLICE_MS):
            pass
        return True

    async def wait_async(self, timeout: Optional[float] = None) -> bool:
        """Await (ours) what :meth:`wait` blocks for: tokens that :meth:`read` has not taken, or the request's end
        (True), or ``timeout`` seconds passing (False). No worker thread: the running asyncio loop watches the
        pipeline's step signal (a library without it: a worker thread waits)."""
        events = self._events
        if events is None:
            return await asyncio.get_running_loop().run_in_executor(None, self.wait, timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            mark = events.mark()
            handle = self._live()
            if native.unread(self._capi, handle) > 0 or native.status(self._capi, handle) != GenerationStatus.RUNNING:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if (left is not None and left <= 0) or not await events.wait(mark, left):
                return False

    def read(self) -> Dict[int, GenerationOutput]:
        """The tokens generated since the last read (blocking until there are some or the request ended), keyed
        by sequence index; empty once everything was read."""
        self.wait()
        ids, probs = native.read(self._capi, self._live())
        if not ids and self.get_status() != GenerationStatus.RUNNING:
            return {}
        score, reason, _ = native.result(self._capi, self._handle)
        return {0: GenerationOutput(ids, probs, score, GenerationFinishReason(reason))}

    def read_text(self) -> str:
        """The streamed text since the last call (non-blocking; complete UTF-8 chunks). Ours, not pybind's."""
        return native.read_text(self._capi, self._live())

    async def read_text_async(self, timeout: Optional[float] = None) -> str:
        """Await streamed text (ours): the next non-empty chunk, or the rest once the request ended ('' when there
        is none: then :meth:`get_status` is no longer RUNNING). No worker thread: the running asyncio loop watches
        the pipeline's step signal. TimeoutError when ``timeout`` seconds pass with nothing new."""
        events = self._events
        if events is None:  # a library without the step signal: wait in a worker thread
            return await asyncio.get_running_loop().run_in_executor(None, self._read_text_blocking, timeout)
        if self._text_buf is None:
            self._text_buf = native.text_buffer(self._capi)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            mark = events.mark()
            handle = self._live()
            text = native.read_text(self._capi, handle, self._text_buf)
            if text:
                return text
            if native.status(self._capi, handle) != GenerationStatus.RUNNING:
                return native.read_text(self._capi, handle, self._text_buf)  # what came with the end
            left = None if deadline is None else deadline - time.monotonic()
            if (left is not None and left <= 0) or not await events.wait(mark, left):
                raise TimeoutError(f"no new text from request {self.request_id} within {timeout} s")

    def _read_text_blocking(self, timeout: Optional[float]) -> str:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            text = native.read_text(self._capi, self._live())
            if text:
                return text
            if self.get_status() != GenerationStatus.RUNNING:
                return native.read_text(self._capi, self._live())
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"no new text from request {self.request_id} within {timeout} s")
            slice_ms = WAIT_SLICE_MS if left is None else min(WAIT_SLICE_MS, int(left * 1000) + 1)
            native.wait(self._capi, self._live(), slice_ms)
            native.read(self._capi, self._live())  # take the ids, so that the next wait blocks

    def read_all(self) -> List[GenerationOutput]:
        """Wait for the end; every generated id of each sequence."""
        handle = self._live()
        while self.get_status() == GenerationStatus.RUNNING:
            native.wait(self._capi, handle, WAIT_SLICE_MS)
            native.read(self._capi, handle)  # consume, so the next wait blocks
        score, reason, _ = native.result(self._capi, handle)
        return [GenerationOutput(native.tokens(self._capi, handle), [], score, GenerationFinishReason(reason))]

    def result(self) -> GenerationResult:
        """Wait for the end; the request's result (the text of every generated id)."""
        outputs = self.read_all()
        status = self.get_status()
        if status == GenerationStatus.IGNORED:
            raise errors.GenAIError(f"the request failed: {native.error_text(self._capi, self._handle)}")
        score, reason, prompt = native.result(self._capi, self._handle)
        return GenerationResult(self.request_id, [native.text(self._capi, self._handle)], [score], status,
                                [GenerationFinishReason(reason)], [outputs[0].generated_ids], prompt)

    def error(self) -> str:
        """Why an IGNORED request failed (empty otherwise)."""
        return native.error_text(self._capi, self._live())

    def cancel(self) -> None:
        """End at the next step (at most one more token is computed, never given out): status CANCEL."""
        native.cancel(self._capi, self._live())

    def drop(self) -> None:
        """Older pybind name of :meth:`cancel`."""
        self.cancel()

    def stop(self) -> None:
        """End at the next step keeping every token: status STOP, finish reason STOP."""
        native.stop(self._capi, self._live())


def _free_pipeline(capi: Any, pipe: Any) -> None:
    native.free(capi, pipe)


class ContinuousBatchingPipeline(NotCopyable):
    """``ContinuousBatchingPipeline(models_path, scheduler_config, device="CPU", properties=None)`` or, as
    openvino_genai's, ``ContinuousBatchingPipeline(models_path, tokenizer, scheduler_config, device, **properties)``
    (that :class:`Tokenizer` in place of the folder's own) (bundled backend only): requests added from any thread
    share its decode steps."""

    def __init__(self, models_path: Union[str, os.PathLike], scheduler_config: Any = None,
                 device: Any = "CPU", properties: Any = None,
                 tokenizer_properties: Optional[Dict[str, Any]] = None, *,
                 library: Any = None, tokenizer: Any = None, **kwargs: Any) -> None:
        if type(scheduler_config).__name__ == "Tokenizer":  # the tokenizer form: the arguments after it move up one
            if tokenizer is not None or tokenizer_properties is not None:
                raise TypeError("ContinuousBatchingPipeline(models_path, tokenizer, scheduler_config, device, "
                                "**properties) takes one tokenizer and no tokenizer_properties")
            tokenizer, scheduler_config, device, properties = scheduler_config, device, properties, None
            if device is None:
                raise TypeError("ContinuousBatchingPipeline(models_path, tokenizer, scheduler_config, device): "
                                "device is missing")
        self._tokenizer = None if tokenizer is None else check_tokenizer(tokenizer)
        self._chat: Optional[List[Dict[str, str]]] = None  # the turns of a start_chat() conversation
        self._chat_lock = threading.Lock()  # one chat turn at a time
        lib = resolve_library(library)
        capi = bind(lib)
        if lib.kind != "bundled" or not native.available(capi):
            raise errors.NotSupportedError(
                "ContinuousBatchingPipeline needs the bundled backend: the official GenAI C API serves one request "
                f"at a time per pipeline and has no batching ABI (this library is {lib.kind!r}); use a pool of "
                "LLMPipeline objects there")
        if tokenizer_properties:
            raise errors.NotSupportedError("tokenizer_properties are not supported by the bundled backend")
        path = check_model_path(models_path, with_tokenizer=tokenizer is None)
        if not isinstance(device, str):
            raise errors.DeviceError(f"device must be a str such as 'CPU', not {type(device).__name__}")
        if properties is not None and not isinstance(properties, dict):
            raise errors.InvalidParameterError(f"properties must be a dict, not {type(properties).__name__}")
        merged = {**(properties or {}), **kwargs}
        if "draft_model" in merged:
            raise errors.NotSupportedError("draft_model: speculative decoding runs on LLMPipeline; the bundled "
                                           "backend's batching pipeline has no drafts")
        props = property_strings(merged) + scheduler_properties(scheduler_config, lib.kind)
        self.models_path = path
        self.device = device
        self._library = lib
        self._capi = capi
        staged = None
        memory_before = _native_memory.before_create()  # (PyPy: pipelines dropped unclosed go first)
        if tokenizer is not None:
            from .model_staging import stage_for_tokenizer

            staged = stage_for_tokenizer(path, tokenizer)  # the C create loads one folder: model and tokenizer
        try:
            self._pipe = native.create(capi, str(staged.path) if staged is not None else path, device, props)
        except errors.GenAIError as exc:
            if staged is None:
                raise
            raise staged.renamed(exc, f"the model folder {path} with the given Tokenizer") from None
        finally:
            if staged is not None:
                staged.remove()
        self._finalizer = weakref.finalize(self, _free_pipeline, capi, self._pipe)
        _native_memory.after_create(memory_before)
        # our own descriptor of the step signal, taken now (the pipeline's is closed by its free)
        self._events = StepEvents(os.dup(native.event_fd(capi, self._pipe))) if native.has_events(capi) else None
        self._ids = 0
        self._manual = False
        self._ids_lock = threading.Lock()
        self._config = GenerationConfig()
        gc_json = os.path.join(path, "generation_config.json")
        if os.path.isfile(gc_json):
            try:
                self._config = GenerationConfig(gc_json)
            except errors.GenAIError:
                pass

    # --- life cycle
    def close(self) -> None:
        """Stop the step loop and free the pipeline; unfinished requests end IGNORED. Safe to call twice."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __enter__(self) -> "ContinuousBatchingPipeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _live(self) -> Any:
        if not self._finalizer.alive:
            raise errors.PipelineClosedError("the pipeline is closed")
        return self._pipe

    def get_config(self) -> GenerationConfig:
        return self._config.copy()

    def get_tokenizer(self) -> Any:
        """The pipeline's :class:`~ovgenai_c.Tokenizer` (the one it was made with, else the model folder's, or the
        one a GGUF file carries)."""
        if self._tokenizer is None:
            if os.path.isdir(self.models_path):
                from .tokenizer import Tokenizer

                self._tokenizer = Tokenizer(self.models_path)
            else:  # a GGUF file: its tokenizer written out as IR by the bundled backend (this pipeline's library)
                from . import gguf_ir

                self._tokenizer = gguf_ir.gguf_tokenizer(self.models_path, self._library)
        return self._tokenizer

    def get_metrics(self) -> Dict[str, int]:
        """The step loop's counters: steps, shared_steps (steps serving two or more requests), max_batch, running,
        waiting, used_blocks, block_limit, preempted, prompt_tokens (admitted) and reused_tokens (of them, taken
        from a running request's KV cache: a common prefix, not prefilled again)."""
        return native.stats(self._capi, self._live())

    def step(self) -> None:
        """GenAI's step(): run one step on this thread. The first call hands the stepping to the caller for good
        (the pipeline's own thread stops stepping; :meth:`generate` then steps on the caller's thread too)."""
        self._manual = True
        native.step(self._capi, self._live())

    def has_non_finished_requests(self) -> bool:
        return native.has_unfinished(self._capi, self._live())

    # --- requests
    def _next_id(self) -> int:
        with self._ids_lock:
            self._ids += 1
            return self._ids

    def _checked_config(self, config: Optional[GenerationConfig]) -> Optional[GenerationConfig]:
        if config is None:
            return None
        if not isinstance(config, GenerationConfig):
            if type(config).__name__ == "GenerationConfig":  # e.g. openvino_genai's: copy what the fields say
                raise TypeError("pass an ovgenai_c.GenerationConfig")
            raise TypeError(f"generation_config must be a GenerationConfig, not {type(config).__name__}")
        unsupported = config.unsupported_fields()
        if unsupported:
            raise errors.NotSupportedError(f"not supported by continuous batching: {', '.join(unsupported)}")
        if config.is_beam_search() or config.num_return_sequences != 1:
            raise errors.NotSupportedError("continuous batching in the bundled backend runs one greedy or sampled "
                                           "sequence per request (no beam search, num_return_sequences 1)")
        config = config.copy()
        if not config.stop_token_ids:
            config.stop_token_ids = self._config.stop_token_ids
        if config.eos_token_id == -1 and self._config.eos_token_id != -1:
            config.set_eos_token_id(self._config.eos_token_id)
        config.validate(eos_from_model=True)
        return config

    def add_request(self, request_id: int, prompt: Union[str, Sequence[int], Any],
                    generation_config: Optional[GenerationConfig] = None, *, templated: bool = False
                    ) -> GenerationHandle:
        """Queue a request: ``prompt`` as text (encoded as it is, special tokens added, as GenAI's add_request;
        ``templated=True``: as ``generate`` encodes it, through the chat template), as a :class:`ChatHistory`
        (or a list of message dicts; templated as ``LLMPipeline.generate(history)`` on a fresh pipeline), or as
        token ids."""
        pipe = self._live()
        config = self._checked_config(generation_config)
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict):
            prompt = ChatHistory(prompt)
        with native_config(self._capi, config) as c:
            if isinstance(prompt, ChatHistory):
                history = native_history(self._capi, prompt.get_messages(), prompt.get_tools(),
                                         prompt.get_extra_context())
                try:
                    handle = native.add_request_history(self._capi, pipe, history, c)
                finally:
                    self._capi.ffi.release(history)
            elif isinstance(prompt, str):
                handle = native.add_request(self._capi, pipe, prompt, templated, c)
            else:
                ids = _token_ids(prompt)
                handle = native.add_request_tokens(self._capi, pipe, ids, c)
        return GenerationHandle(self, handle, int(request_id))

    # --- chat (GenAI's start_chat / finish_chat, deprecated there as on LLMPipeline)
    def start_chat(self, system_message: str = "") -> None:
        """Later generate() calls take one prompt each and see the turns before it: the conversation (with
        ``system_message`` first) goes through the chat template, as GenAI's pipeline renders it."""
        warn_chat_api_deprecated()
        if not isinstance(system_message, str):
            raise TypeError(f"system_message must be a str, not {type(system_message).__name__}")
        with self._chat_lock:
            if self._chat is None:
                self._chat = []
            if system_message:
                self._chat.append({"role": "system", "content": system_message})

    def finish_chat(self) -> None:
        """End the chat and forget its turns."""
        warn_chat_api_deprecated()
        with self._chat_lock:
            self._chat = None

    def generate(self, prompts: Union[str, Sequence[str]],
                 generation_config: Union[None, GenerationConfig, Sequence[GenerationConfig]] = None,
                 streamer: Optional[Callable[[str], Any]] = None) -> List[GenerationResult]:
        """Run every prompt (through the chat template when its config applies it, as GenAI's generate) in one
        batch; one result per prompt. ``streamer`` (one prompt only) gets the text chunks; returning True (or
        StreamingStatus.STOP / CANCEL) ends the request. In a chat (:meth:`start_chat`): one prompt, answered
        with the conversation so far; the turn is kept unless the request was cancelled."""
        if self._chat is not None:
            with self._chat_lock:
                if self._chat is not None:
                    return self._chat_turn(prompts, generation_config, streamer)
        return self._generate(prompts, generation_config, streamer)

    def _chat_turn(self, prompts: Union[str, Sequence[str]], generation_config: Any,
                   streamer: Optional[Callable[[str], Any]]) -> List[GenerationResult]:
        chat = self._chat
        assert chat is not None
        prompts = [prompts] if isinstance(prompts, str) else list(prompts)
        if len(prompts) != 1:
            raise errors.InvalidParameterError(f"Can't chat with multiple prompts ({len(prompts)} given; a chat "
                                               "turn takes one)")
        if not isinstance(prompts[0], str):
            raise TypeError("prompts must be a list of str")
        chat.append({"role": "user", "content": prompts[0]})
        try:
            results = self._generate([ChatHistory([dict(m) for m in chat])], generation_config, streamer)
        except BaseException:
            chat.pop()
            raise
        if results[0].m_status == GenerationStatus.CANCEL:
            chat.pop()  # a cancelled turn leaves no trace, as GenAI's
        else:
            chat.append({"role": "assistant", "content": results[0].m_generation_ids[0]})
        return results

    def _generate(self, prompts: Union[str, Sequence[Any]],
                  generation_config: Union[None, GenerationConfig, Sequence[GenerationConfig]],
                  streamer: Optional[Callable[[str], Any]]) -> List[GenerationResult]:
        if isinstance(prompts, str):
            prompts = [prompts]
        prompts = list(prompts)
        if not all(isinstance(p, (str, ChatHistory)) for p in prompts):
            raise TypeError("prompts must be a list of str")
        if generation_config is None or isinstance(generation_config, GenerationConfig):
            configs = [generation_config] * len(prompts)
        else:
            configs = list(generation_config)
        if len(configs) != len(prompts):
            raise errors.InvalidParameterError(
                f"{len(prompts)} prompts but {len(configs)} generation configs (give one per prompt)")
        if streamer is not None and len(prompts) != 1:
            raise errors.NotSupportedError("a streamer is supported for one prompt only")
        handles: List[GenerationHandle] = []
        started = time.monotonic()
        first: Optional[float] = None  # when the batch's first token came (as near as seen from here)
        try:
            for prompt, cfg in zip(prompts, configs):
                handles.append(self.add_request(self._next_id(), prompt, cfg, templated=True))
            if self._manual:  # the caller steps (GenAI's step() was used)
                while any(h.get_status() == GenerationStatus.RUNNING for h in handles):
                    native.step(self._capi, self._live())
                    first = time.monotonic() if first is None else first
            elif streamer is not None:
                first = _stream_to(handles[0], streamer)
            else:
                handles[0].wait()  # (its tokens are left for result(): this only notes the time)
                first = time.monotonic()
            results = [h.result() for h in handles]
            ended = time.monotonic()
            generated = sum(len(ids) for r in results for ids in r.tokens)
            for r in results:
                r.perf_metrics = measured_perf_metrics(generated, r.num_input_tokens, started, first, ended,
                                                       sequences=len(results))
            return results
        except BaseException:
            for h in handles:
                h.cancel()
            raise
        finally:
            for h in handles:
                h.close()


def _stream_to(handle: GenerationHandle, streamer: Callable[[str], Any]) -> Optional[float]:
    """Feed ``streamer`` the text as it comes (the rest is left for the result); a truthy / STOP / CANCEL answer
    stops (STOP) or cancels (CANCEL) the request. Returns when the first token was seen."""
    first: Optional[float] = None
    while True:
        handle.wait()
        first = time.monotonic() if first is None else first
        text = handle.read_text()
        native.read(handle._capi, handle._handle)  # ids are taken by the result, not here
        if text:
            answer = streamer(text)
            value = getattr(answer, "value", answer)
            if value is True or value == 1:
                handle.stop()
            elif value == 2:
                handle.cancel()
        if handle.get_status() != GenerationStatus.RUNNING:
            rest = handle.read_text()
            if rest:
                streamer(rest)
            return first


def _token_ids(prompt: Any) -> List[int]:
    """Token ids from a list of ints or a 1×N / N tensor-like (``.data`` / ``tolist``)."""
    data = getattr(prompt, "data", prompt)
    if hasattr(data, "tolist"):
        data = data.tolist()
    if data and isinstance(data[0], list):
        if len(data) != 1:
            raise errors.NotSupportedError("one sequence per request")
        data = data[0]
    try:
        ids = [int(x) for x in data]
    except (TypeError, ValueError):
        raise TypeError("prompt must be a str or a sequence of token ids") from None
    if not ids:
        raise errors.InvalidParameterError("the prompt has no tokens")
    return ids
