"""Provider: "chat with model X" over :class:`ovgenai_c.LLMPipeline`, with honest capabilities, profile defaults,
Ollama-style options and pooled sessions.

::

    from ovgenai_c.provider import Provider
    p = Provider("/models/qwen2.5-0.5b-instruct")
    p.capabilities            # Capabilities(chat=True, prompt=True, stream=True, embed=False, think=False, tools=True, ...)
    p.prompt("What is the capital of France?", num_predict=32)   # unset: capped at the context window
    r = p.chat([{"role": "user", "content": "Hi"}], temperature=0)
    r.message, r.usage, r.finish_reason
    with p.stream([{"role": "user", "content": "Tell me a story"}]) as s:
        for chunk in s: print(chunk, end="")
"""
from __future__ import annotations

import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Optional, Union

from .. import errors
from ..chat import ChatHistory
from ..ir_folder import IR_FILES
from ..results import DecodedResults, PerfMetrics, speculative_perf_metrics
from ..speculative import DraftModel
from .errors import CapabilityNotSupportedError, ContextLengthExceededError, ProfileError
from .model_info import (ModelInfo, model_info, template_supports_think, template_supports_tools,
                         template_tool_format)
from .options import check_options, to_generation_kwargs
from .pool import Lease, SessionPool, default_pool
from .profile import Profile, profile_for
from .thinking import Piece, opens_thinking, pieces, split_thinking
from .tools import parse_tool_calls
from .transcription import (TASKS, TranscriptionResult, result_from, whisper_stream_unsupported_reason,
                            whisper_sampling_unsupported_reason, whisper_unsupported_reason,
                            whisper_words_unsupported_reason)

DEVICE_ENV = "OVGENAI_DEVICE"
# Why no provider takes images (the server's refusal of image parts names it): it serves text models through
# LLMPipeline. Images need a VLM folder served by VLMPipeline, whose C functions the bundled backend does not
# implement (the official GenAI C library does).
IMAGES_REFUSED = ("this server serves text models (LLMPipeline), so images cannot be used; a vision-language model "
                  "needs VLMPipeline, which the bundled backend does not implement (the official GenAI C library is "
                  "needed)")
Messages = Union[str, List[Dict[str, Any]], ChatHistory]


@dataclass(frozen=True)
class Capabilities:
    """What the provider can honestly do with this model on the loaded library."""

    chat: bool
    prompt: bool
    stream: bool
    embed: bool
    think: bool
    tools: bool
    context_length: Optional[int]
    max_output_tokens: Optional[int]
    tool_call_format: Optional[str] = None
    vision: bool = False  # images in: never here (text models through LLMPipeline; see IMAGES_REFUSED)
    transcribe: bool = False  # speech to text: a Whisper folder on a library with whisper_pipeline.h
    transcribe_stream: bool = False  # ...whose text can be streamed (transcribe(on_text=): the bundled backend)
    transcribe_words: bool = False  # ...with word timings (transcribe(words=True): the bundled backend)
    transcribe_sampling: bool = False  # ...sampled at a temperature (transcribe(temperature=0.4): the bundled backend)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass
class ChatResult:
    """One answer: ``message`` is ``{"role": "assistant", "content": str}`` (+ ``"tool_calls"`` when parsed)."""

    message: Dict[str, Any]
    usage: Dict[str, int]
    finish_reason: str  # "stop", "length", "cancel" or "tool_calls"
    perf: PerfMetrics = field(default_factory=PerfMetrics)

    @property
    def text(self) -> str:
        return self.message.get("content") or ""

    @property
    def tool_calls(self) -> List[Dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])

    def to_dict(self) -> Dict[str, Any]:
        return {"message": self.message, "usage": dict(self.usage), "finish_reason": self.finish_reason,
                "perf": perf_dict(self.perf)}


def perf_dict(perf: PerfMetrics) -> Dict[str, Any]:
    """Perf metrics as plain numbers (milliseconds as upstream reports them; throughput in tokens/s)."""
    out: Dict[str, Any] = {"load_time_ms": perf.get_load_time(), "num_input_tokens": perf.get_num_input_tokens(),
                           "num_generated_tokens": perf.get_num_generated_tokens()}
    for name in ("ttft", "tpot", "ipot", "throughput", "generate_duration", "inference_duration",
                 "tokenization_duration", "detokenization_duration"):
        try:
            pair = getattr(perf, f"get_{name}")()
        except Exception:
            continue
        out[name] = {"mean": pair.mean, "std": pair.std}
    spec = speculative_perf_metrics(perf)
    if spec is not None:  # a draft model proposed tokens (speculative decoding)
        out["draft_tokens"] = spec.get_num_draft_tokens()
        out["accepted_draft_tokens"] = spec.get_num_accepted_tokens()
    return out


def _what(messages: Any) -> str:
    """What the caller sent, as an error names it: "prompt" (a str) or "messages"."""
    return "prompt" if isinstance(messages, str) else "messages"


def resolve_device(explicit: Optional[str], profile: Profile) -> str:
    """Device order: explicit argument, then ``OVGENAI_DEVICE``, then the profile, then ``"CPU"``."""
    if explicit:
        return explicit
    env = os.environ.get(DEVICE_ENV, "").strip()
    if env:
        return env
    if profile.device:
        return profile.device
    return "CPU"


def library_kind(library: Any = None) -> Optional[str]:
    """The kind ("bundled" / "official" / "other") of ``library`` (a loaded library or a path), or of the process
    library when None (None if no library is found)."""
    if library is None:
        from .. import library_info

        try:
            return library_info()["kind"]
        except errors.LibraryNotFoundError:
            return None
    kind = getattr(library, "kind", None)
    if kind is not None:
        return kind
    from .. import open_library

    return open_library(os.fspath(library)).kind


class Provider:
    """A model served through the GenAI C API.

    ``model``: an IR folder or a GGUF file (``os.PathLike``/str), or a :class:`~ovgenai_c.provider.catalog.ModelEntry`.
    ``device``: overrides ``OVGENAI_DEVICE`` and the profile. ``properties``: OpenVINO properties (merged over the
    profile's); no compiled-model cache unless asked — pass ``{"CACHE_DIR": ...}`` (the command line passes
    ``ovgenai_c.models.compiled_cache_dir()`` and ``ATTENTION_BACKEND=SDPA``). ``library``: a library path or
    loaded library (default: the process library). ``pool``: a :class:`SessionPool` (default: the process-wide
    pool). ``options``: default Ollama-style options (over the
    profile's).
    """

    def __init__(self, model: Any, *, device: Optional[str] = None, properties: Optional[Dict[str, Any]] = None,
                 library: Any = None, pool: Optional[SessionPool] = None,
                 options: Optional[Dict[str, Any]] = None, profile: Optional[Profile] = None) -> None:
        path = getattr(model, "path", model)
        if not isinstance(path, (str, os.PathLike)):
            raise errors.InvalidParameterError(f"model must be a path or a catalog entry, not {type(model).__name__}")
        self.path = Path(os.fspath(path)).expanduser()
        if not self.path.exists():
            raise errors.ModelNotFoundError(f"model path does not exist: {self.path}")
        self.profile = profile if profile is not None else profile_for(self.path)
        self.info: ModelInfo = model_info(self.path)
        if self.info.format == "whisper":  # speech to text: no chat template, no context window
            self.info = ModelInfo(path=str(self.path), format="whisper", chat_template=None, context_length=None)
        if self.info.format is None:
            raise errors.ModelNotFoundError(
                f"{self.path} is neither an OpenVINO IR model folder ({', '.join(IR_FILES)}) nor a .gguf file")
        self.device = resolve_device(device, self.profile)
        self.properties = {**self.profile.properties, **(properties or {})}
        self.library = library
        self.pool = pool if pool is not None else default_pool()
        self.default_options = {**self.profile.options, **check_options(options or {})}
        self.library_kind = library_kind(library)  # (both libraries load IR folders and GGUF files)
        if self.profile.draft_model and "draft_model" not in self.properties and self.info.format != "whisper":
            self.properties["draft_model"] = self._profile_draft(self.library_kind)
        whisper = self.info.format == "whisper"
        not_whisper = f"{self.path} is not a Whisper model folder, so it cannot transcribe"
        self.transcribe_refused = whisper_unsupported_reason(library) if whisper else None
        self.transcribe_stream_refused = (
            (self.transcribe_refused or whisper_stream_unsupported_reason(library)) if whisper else not_whisper)
        self.transcribe_words_refused = (
            (self.transcribe_refused or whisper_words_unsupported_reason(library, self.path)) if whisper
            else not_whisper)
        self.transcribe_sampling_refused = (
            (self.transcribe_refused or whisper_sampling_unsupported_reason(library)) if whisper else not_whisper)
        self._whisper: Any = None  # the WhisperPipeline of a Whisper folder, made on first use
        self._whisper_words: Any = None  # ...and the one made with word_timestamps=True, on the first words asked
        self._whisper_lock = threading.Lock()
        self.capabilities = self._capabilities()

    def __repr__(self) -> str:
        return f"<Provider {str(self.path)!r} {self.info.format} on {self.device}>"

    def _profile_draft(self, kind: Optional[str]) -> DraftModel:
        """The profile's ``draft_model`` (speculative decoding) with the draft's own profile properties, on this
        model's device; refused by name where it cannot run."""
        where = f"{self.profile.path}: field 'draft_model'"
        if kind != "bundled":
            raise errors.NotSupportedError(f"{where}: speculative decoding runs on the bundled backend; the {kind} "
                                           "library's C API cannot take a draft model")
        path = self.profile.draft_model_path()
        try:
            return DraftModel(path, "", **profile_for(path).properties)
        except errors.GenAIError as exc:
            raise ProfileError(f"{where}: {exc}", path=self.profile.path, field="draft_model") from None

    # --- capabilities ------------------------------------------------------------------------------
    def _capabilities(self) -> Capabilities:
        if self.info.format == "whisper":  # speech in, text out: no chat, prompt or stream
            return Capabilities(chat=False, prompt=False, stream=False, embed=False, think=False, tools=False,
                                context_length=None, max_output_tokens=None, transcribe=self.transcribe_refused is None,
                                transcribe_stream=self.transcribe_stream_refused is None,
                                transcribe_words=self.transcribe_words_refused is None,
                                transcribe_sampling=self.transcribe_sampling_refused is None)
        tmpl = self.info.chat_template
        over = self.profile.capabilities
        fmt = self.profile.tool_call_format or template_tool_format(tmpl)
        tools = template_supports_tools(tmpl) and fmt is not None
        return Capabilities(
            chat=over.get("chat", tmpl is not None),
            prompt=over.get("prompt", True),
            stream=over.get("stream", True),
            embed=False,
            think=over.get("think", template_supports_think(tmpl)),
            tools=over.get("tools", tools),
            context_length=self.profile.context_length or self.info.context_length,
            max_output_tokens=self.profile.max_output_tokens,
            tool_call_format=fmt if over.get("tools", tools) else None,
            vision=False,  # a text model on LLMPipeline, whatever the library (the bundled one has no VLMs at all)
        )

    # --- sessions ----------------------------------------------------------------------------------
    def lease(self) -> Lease:
        """A lease on this model's pooled pipeline (created on first use, then kept warm)."""
        return self.pool.lease(self.path, self.device, self.properties, self.library)

    def load(self) -> float:
        """Create (or find warm) the pipeline now; returns its load time in seconds."""
        if self.info.format == "whisper":
            import time

            t0 = time.monotonic()
            self.whisper_pipeline()
            return time.monotonic() - t0
        with self.lease() as lease:
            return lease.load_time

    def warm_up(self) -> None:
        """Run a 2-token greedy answer: OpenVINO prepares its kernels and weight layouts on the first inference
        of each kind (a prompt, then one next token), so the first real request is then as fast as the rest.
        A Whisper model is only loaded (a warm-up transcription cannot be cancelled)."""
        if self.info.format == "whisper":
            self.load()
            return
        with self.lease() as lease:
            lease.pipeline.generate("Hi", max_new_tokens=2, do_sample=False)

    # --- requests ----------------------------------------------------------------------------------
    def _config_kwargs(self, options: Dict[str, Any]) -> Dict[str, Any]:
        merged = {**self.default_options, **check_options(options)}
        caps = self.capabilities
        return to_generation_kwargs(merged, caps.max_output_tokens, caps.context_length)

    def _history(self, messages: Messages, tools: Optional[List[Any]], system: Optional[str] = None,
                 think: Optional[bool] = None) -> ChatHistory:
        caps = self.capabilities
        if self.info.format == "whisper":
            self._require("chat")
        if not caps.chat:
            raise CapabilityNotSupportedError(
                f"{self.path} has no chat template, so it cannot take chat messages; use prompt(text) instead",
                "chat")
        if isinstance(messages, str):
            msgs: List[Dict[str, Any]] = [{"role": "user", "content": messages}]
        elif isinstance(messages, ChatHistory):
            msgs = messages.get_messages()
        elif isinstance(messages, list):
            msgs = list(messages)
        else:
            raise errors.InvalidParameterError(
                f"messages must be a list of {{'role', 'content'}} dicts, not {type(messages).__name__}")
        if not msgs:
            raise errors.InvalidParameterError("messages must not be empty")
        if system is not None:
            msgs = [{"role": "system", "content": system}] + msgs
        history = ChatHistory(msgs)
        if isinstance(messages, ChatHistory):
            if messages.get_tools():
                tools = list(tools or []) + messages.get_tools()
            history.set_extra_context(messages.get_extra_context())
        if tools:
            if not caps.tools:
                raise CapabilityNotSupportedError(
                    f"tools were given but the chat template of {self.path} does not support tools (or its "
                    "tool-call format is not recognised); refusing rather than ignoring them. Set "
                    "capabilities.tools and tool_call_format in the model profile if you know better.", "tools")
            history.set_tools(list(tools))
        think = self._think(think)
        if think is not None:
            extra = history.get_extra_context()
            extra["enable_thinking"] = bool(think)
            history.set_extra_context(extra)
        return history

    def _think(self, think: Optional[bool]) -> Optional[bool]:
        """The thinking switch to set: as Ollama, only ``True`` needs a template that has one (refused otherwise);
        ``False`` on a template without one asks for nothing it lacks (None: nothing set)."""
        if think is None or self.capabilities.think:
            return think
        if think:
            raise CapabilityNotSupportedError(f"the chat template of {self.path} has no thinking switch", "think")
        return None

    def _whole_prompt_tokens(self, pipeline: Any, inputs: Any, counted: Optional[int] = None) -> Optional[int]:
        """The whole prompt's token count of a chat request where the pipeline's own count covers only the tokens
        it fed (SDPA reuses the previous turn's KV cache: GenAI's num_input_tokens then undercounts the prompt);
        None where the count is already whole. ``counted``: the count :meth:`_fit_context` made (not made again)."""
        if not isinstance(inputs, ChatHistory) or str(self.properties.get("ATTENTION_BACKEND", "")).upper() != "SDPA":
            return None
        return counted if counted is not None else self._count_prompt(pipeline, inputs)

    @staticmethod
    def _prompt_text(pipeline: Any, inputs: Any, raw: bool = False) -> Optional["tuple[Any, str, bool]"]:
        """(tokenizer, the prompt as the model gets it, whether it is encoded with special tokens): a ChatHistory —
        or a str, which GenAI puts through the template as one user message — rendered (then no special tokens); a
        raw str (or any str on a model without a template) as it is, with them. None where the tokenizer cannot be
        had (a GGUF file on the official library, which keeps it inside; a pipeline without one). On the bundled
        backend a GGUF's pipeline writes the tokenizer the file carries as IR."""
        get = getattr(pipeline, "get_tokenizer", None)
        if get is None:
            return None
        try:
            tok = get()
            if isinstance(inputs, ChatHistory):
                return tok, tok.apply_chat_template(inputs, add_generation_prompt=True), False
            if not raw and tok.get_chat_template():
                return tok, tok.apply_chat_template([{"role": "user", "content": inputs}],
                                                    add_generation_prompt=True), False
            return tok, inputs, True
        except errors.GenAIError:
            return None

    @classmethod
    def _count_prompt(cls, pipeline: Any, inputs: Any, raw: bool = False) -> Optional[int]:
        """The prompt's token count as the pipeline encodes it, with its own tokenizer and chat template
        (:meth:`_prompt_text`); None where the tokenizer cannot be had."""
        return cls._count_text(cls._prompt_text(pipeline, inputs, raw))

    @staticmethod
    def _count_text(prompt: Optional["tuple[Any, str, bool]"]) -> Optional[int]:
        """The token count of a rendered prompt (:meth:`_prompt_text`; None: none could be had)."""
        if prompt is None:
            return None
        tok, text, special = prompt
        try:
            return int(tok.encode(text, add_special_tokens=special).input_ids.shape[-1])
        except errors.GenAIError:
            return None

    def _prepare(self, pipeline: Any, inputs: Any, kw: Dict[str, Any], raw: bool = False,
                 what: str = "messages") -> "tuple[Optional[int], Optional[bool]]":
        """What a request needs to know of its prompt before it runs, from one render of it: (the prompt's token
        count, where the context window is known and the prompt fits — see :meth:`_fit_context`; whether the
        prompt opens a thinking model's reasoning — None for a model that does not think or a raw prompt, else
        whether the template ends it with ``<think>``, unknown counting as not)."""
        thinks = not raw and bool(self.capabilities.think)
        if not self.capabilities.context_length and not thinks:
            return None, None
        prompt = self._prompt_text(pipeline, inputs, raw)
        counted = self._fit_context(prompt, kw, what)
        opened = (prompt is not None and opens_thinking(prompt[1])) if thinks else None
        return counted, opened

    def _fit_context(self, prompt: Optional["tuple[Any, str, bool]"], kw: Dict[str, Any],
                     what: str = "messages") -> Optional[int]:
        """Where the context window is known (profile or model config): refuse a prompt (:meth:`_prompt_text`) that
        leaves no room for one new token (:class:`ContextLengthExceededError`, naming both numbers) and cap
        ``kw["max_new_tokens"]`` at what the prompt leaves. The engine may not know the window itself (an IR
        converted from GGUF has no config.json): without this it would cut the prompt and generate past the
        window. Returns the prompt's token count (None: the window is unknown or the prompt cannot be counted)."""
        ctx = self.capabilities.context_length
        if not ctx:
            return None
        n = self._count_text(prompt)
        if n is None:
            return None
        if n >= ctx:  # (a tokenizer may stop counting at its own limit, often the window: then "at least")
            raise ContextLengthExceededError(n, ctx, what, at_least=n == ctx)
        kw["max_new_tokens"] = min(kw.get("max_new_tokens") or ctx, ctx - n)
        return n

    def _result(self, res: DecodedResults, tools: bool, prompt_tokens: Optional[int] = None,
                thinking_opened: Optional[bool] = None) -> ChatResult:
        """The ChatResult of an answer: its reasoning split off (a thinking model: ``thinking_opened`` not None, True
        when the prompt opened it), tool calls parsed, usage."""
        text = res.texts[0] if res.texts else ""
        thinking = None
        if thinking_opened is not None:
            thinking, text = split_thinking(text, thinking_opened)
        message: Dict[str, Any] = {"role": "assistant", "content": text}
        if thinking is not None:
            message["thinking"] = thinking
        reason = res.finish_reason
        if tools:
            rest, calls = parse_tool_calls(text, self.capabilities.tool_call_format)
            if calls:
                message = {**message, "content": rest, "tool_calls": calls}
                if reason == "stop":
                    reason = "tool_calls"
        perf = res.perf_metrics
        usage = {"prompt_tokens": perf.get_num_input_tokens() if prompt_tokens is None else prompt_tokens,
                 "completion_tokens": perf.get_num_generated_tokens()}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return ChatResult(message=message, usage=usage, finish_reason=reason, perf=perf)

    def _require(self, name: str) -> None:
        if self.info.format == "whisper" and name != "transcribe":
            raise CapabilityNotSupportedError(
                f"{self.path} is a Whisper (speech-to-text) model: it cannot {name}; use transcribe(audio)", name)
        if not getattr(self.capabilities, name):
            raise CapabilityNotSupportedError(f"{name} is disabled for {self.path} by its profile", name)

    def prompt(self, text: str, system: Optional[str] = None, *, think: Optional[bool] = None,
               timeout: Optional[float] = None, **options: Any) -> str:
        """One answer to ``text`` (the chat template is applied, as GenAI does); ``system`` adds a system message,
        ``think`` sets a thinking model's switch (its reasoning is left out of the answer: see prompt_result).
        ``timeout`` (seconds) cancels natively and raises :class:`ovgenai_c.GenerationTimeoutError`."""
        return self.prompt_result(text, system=system, think=think, timeout=timeout, **options).text

    def prompt_result(self, text: str, system: Optional[str] = None, *, think: Optional[bool] = None,
                      timeout: Optional[float] = None, **options: Any) -> ChatResult:
        """Like :meth:`prompt`, with usage, finish reason, perf metrics and a thinking model's reasoning
        (``message["thinking"]``)."""
        self._require("prompt")
        if not isinstance(text, str):
            raise errors.InvalidParameterError(f"the prompt must be a str, not {type(text).__name__}")
        kw = self._config_kwargs(options)
        inputs = self._inputs(text, None, system, think)
        with self.lease() as lease:
            _, opened = self._prepare(lease.pipeline, inputs, kw, what="prompt")
            res = lease.pipeline.generate(inputs, timeout=timeout, **kw)
        return self._result(res, tools=False, thinking_opened=opened)

    def chat(self, messages: Messages, tools: Optional[List[Any]] = None, *, think: Optional[bool] = None,
             timeout: Optional[float] = None, **options: Any) -> ChatResult:
        """Answer a conversation (list of ``{"role", "content"}`` dicts). ``tools``: OpenAI-style tool definitions,
        passed to the chat template; tool calls in the answer come back parsed in ``message["tool_calls"]``."""
        history = self._history(messages, tools, think=think)
        kw = self._config_kwargs(options)
        with self.lease() as lease:
            counted, opened = self._prepare(lease.pipeline, history, kw, what=_what(messages))
            res = lease.pipeline.generate(history, timeout=timeout, **kw)
            whole = self._whole_prompt_tokens(lease.pipeline, history, counted)
        return self._result(res, tools=bool(history.get_tools()), prompt_tokens=whole, thinking_opened=opened)

    def _inputs(self, messages: Messages, tools: Optional[List[Any]], system: Optional[str],
                think: Optional[bool]) -> Any:
        """A plain prompt str (templated by GenAI, as prompt() does) or a ChatHistory."""
        think = self._think(think)
        if isinstance(messages, str) and not tools and system is None and think is None:
            if not isinstance(messages, str):
                raise errors.InvalidParameterError("the prompt must be a str")
            return messages
        return self._history(messages, tools, system=system, think=think)

    def _raw_prompt(self, messages: Messages, tools: Optional[List[Any]], system: Optional[str],
                    think: Optional[bool]) -> str:
        """The prompt of a raw request: a str, with nothing a template would carry."""
        if not isinstance(messages, str):
            raise errors.InvalidParameterError("a raw request takes a prompt str, not chat messages")
        if tools or system is not None or self._think(think) is not None:
            raise errors.InvalidParameterError("a raw request applies no chat template: tools, system and think "
                                               "cannot be used with it")
        return messages

    def stream(self, messages: Messages, tools: Optional[List[Any]] = None, *, system: Optional[str] = None,
               think: Optional[bool] = None, timeout: Optional[float] = None, raw: bool = False,
               **options: Any) -> "ChatStream":
        """Iterate over the answer's text chunks (``messages``: a list of message dicts, or a prompt str).
        ``raw``: the prompt str goes to the model as it is (no chat template; GenAI's apply_chat_template=False).
        Closing the stream (or leaving its ``with`` block) cancels natively and waits for C to let go."""
        self._require("stream")
        inputs = self._raw_prompt(messages, tools, system, think) if raw else \
            self._inputs(messages, tools, system, think)
        kw = self._config_kwargs(options)
        if raw:
            kw["apply_chat_template"] = False
        lease = self.lease()
        try:
            counted, opened = self._prepare(lease.pipeline, inputs, kw, raw, _what(messages))
            ts = lease.pipeline.stream(inputs, timeout=timeout, **kw)
        except BaseException:
            lease.release()
            raise
        return ChatStream(self, lease, ts, isinstance(inputs, ChatHistory) and bool(inputs.get_tools()), inputs,
                          counted, opened)

    async def astream(self, messages: Messages, tools: Optional[List[Any]] = None, *,
                      system: Optional[str] = None, think: Optional[bool] = None,
                      **options: Any) -> AsyncIterator[str]:
        """Async iterator of text chunks; cancelling the consuming task cancels generation natively."""
        self._require("stream")
        inputs = self._inputs(messages, tools, system, think)
        kw = self._config_kwargs(options)
        lease = self.lease()
        try:
            import asyncio

            await asyncio.to_thread(self._prepare, lease.pipeline, inputs, kw, False, _what(messages))
            async for chunk in lease.pipeline.astream(inputs, **kw):
                yield chunk
        finally:
            lease.release()

    def transcribe(self, audio: Any, *, language: Optional[str] = None, task: Optional[str] = None,
                   timestamps: bool = False, prompt: Optional[str] = None, timeout: Optional[float] = None,
                   on_text: Optional[Callable[[str], Any]] = None, words: bool = False,
                   temperature: Optional[float] = None, seed: Optional[int] = None) -> TranscriptionResult:
        """Speech to text with a Whisper model: ``audio`` is a WAV path or 16 kHz mono samples (see
        :mod:`ovgenai_c.audio`); ``language`` ("en" or "<|en|>"), ``task`` ("transcribe" / "translate"),
        ``timestamps`` (segments), ``prompt`` (Whisper's initial_prompt). ``timeout`` stops the transcription on
        the bundled backend; elsewhere it abandons the wait only (the GenAI C ABI cannot cancel one).
        ``on_text(piece)`` gets the text as it is decoded (``capabilities.transcribe_stream``: the bundled backend;
        on the pipeline's thread; returning True stops the transcription, keeping what was decoded). ``words``:
        word timings too (``capabilities.transcribe_words``: the bundled backend; run by a second pipeline, made
        with GenAI's word_timestamps property on first use, so plain transcriptions stay those of GenAI's plain
        pipeline). ``temperature`` above 0 samples the tokens (``capabilities.transcribe_sampling``: the bundled
        backend; 0 or None: greedy, the model's own decoding), from a generator seeded with ``seed`` (default 0, as
        GenAI's rng_seed)."""
        if self.info.format != "whisper":
            raise CapabilityNotSupportedError(f"{self.path} is not a Whisper model folder, so it cannot transcribe",
                                              "transcribe")
        if self.transcribe_refused is not None:
            raise CapabilityNotSupportedError(self.transcribe_refused, "transcribe")
        if task is not None and task not in TASKS:
            raise errors.InvalidParameterError(f"task must be 'transcribe' or 'translate', got {task!r}")
        if not isinstance(timestamps, bool):
            raise errors.InvalidParameterError(f"timestamps must be a bool, not {type(timestamps).__name__}")
        if not isinstance(words, bool):
            raise errors.InvalidParameterError(f"words must be a bool, not {type(words).__name__}")
        if words and self.transcribe_words_refused is not None:
            raise CapabilityNotSupportedError(f"word timestamps: {self.transcribe_words_refused}", "transcribe_words")
        if on_text is not None:
            if not callable(on_text):
                raise errors.InvalidParameterError(f"on_text must be a callable taking the new text (str), not "
                                                   f"{type(on_text).__name__}")
            if self.transcribe_stream_refused is not None:
                raise CapabilityNotSupportedError(f"streaming a transcription: {self.transcribe_stream_refused}",
                                                  "transcribe_stream")
        sampling = self._transcription_sampling(temperature, seed)
        from ..audio import as_samples

        samples = as_samples(audio, "audio")
        fields: Dict[str, Any] = {"return_timestamps": timestamps, **sampling}
        if language is not None:
            fields["language"] = language
        if task is not None:
            fields["task"] = task
        if prompt is not None:
            fields["initial_prompt"] = prompt
        if words:
            fields["word_timestamps"] = True
        res = self.whisper_pipeline(words).generate(samples, None, on_text, timeout=timeout, **fields)
        return result_from(res, int(samples.size), task or "transcribe")

    def _transcription_sampling(self, temperature: Any, seed: Any) -> Dict[str, Any]:
        """The Whisper config fields of a transcription's ``temperature`` and ``seed`` (none for greedy)."""
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                        or not 0.0 <= temperature < float("inf")):
            raise errors.InvalidParameterError(f"temperature must be a number >= 0, got {temperature!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 64):
            raise errors.InvalidParameterError(f"seed must be an int in [0, 2**64), got {seed!r}")
        if not temperature:
            return {}
        if self.transcribe_sampling_refused is not None:
            raise CapabilityNotSupportedError(f"temperature {temperature}: {self.transcribe_sampling_refused}",
                                              "transcribe_sampling")
        fields: Dict[str, Any] = {"do_sample": True, "temperature": float(temperature)}
        if seed is not None:
            fields["rng_seed"] = seed
        return fields

    def whisper_pipeline(self, words: bool = False) -> Any:
        """The provider's :class:`ovgenai_c.WhisperPipeline` (made on first use; calls on it run one at a time);
        ``words``: the one made with the word_timestamps property (its decoder's cross-attention decomposed, as
        GenAI does). ATTENTION_BACKEND (an LLM pipeline property the command line sets) is not passed: Whisper
        compiles its models with plain OpenVINO properties."""
        attr = "_whisper_words" if words else "_whisper"
        with self._whisper_lock:
            if getattr(self, attr) is None:
                from ..whisper_pipeline import WhisperPipeline

                props = {k: v for k, v in self.properties.items() if k != "ATTENTION_BACKEND"}
                if words:
                    props["word_timestamps"] = True
                setattr(self, attr, WhisperPipeline(self.path, self.device, library=self.library, **props))
            return getattr(self, attr)

    def embed(self, *args: Any, **kwargs: Any) -> Any:
        """Not available: the GenAI C API has no embedding pipeline."""
        raise CapabilityNotSupportedError(
            "embeddings are not supported: the OpenVINO GenAI C API has no embedding pipeline "
            "(capabilities.embed is False)", "embed")

    def close(self) -> None:
        """Free the Whisper pipelines, if any were made (LLM sessions belong to the pool)."""
        with self._whisper_lock:
            pipes, self._whisper, self._whisper_words = (self._whisper, self._whisper_words), None, None
        for whisper in pipes:
            if whisper is not None:
                whisper.close()

    def __enter__(self) -> "Provider":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class ChatStream(Iterator[str]):
    """Text chunks of one streamed answer; ``.result`` (a :class:`ChatResult`) once exhausted."""

    def __init__(self, provider: Provider, lease: Lease, text_stream: Any, tools: bool, inputs: Any = None,
                 counted: Optional[int] = None, thinking_opened: Optional[bool] = None) -> None:
        self._provider = provider
        # a thinking model's stream (None: the model does not think): whether its prompt opened the reasoning, for
        # a ThinkingSplitter of its chunks (the server's) and the final result
        self.thinking_opened = thinking_opened
        self._inputs = inputs
        self._counted = counted  # the prompt's token count, when the context check made it
        self._lease = lease
        self._ts = text_stream
        self._tools = tools
        self.result: Optional[ChatResult] = None

    def __iter__(self) -> "ChatStream":
        return self

    def __next__(self) -> str:
        try:
            return next(self._ts)
        except StopIteration:
            if self.result is None and self._ts.result is not None:
                whole = self._provider._whole_prompt_tokens(self._lease.pipeline, self._inputs, self._counted)
                self.result = self._provider._result(self._ts.result, self._tools, prompt_tokens=whole,
                                                     thinking_opened=self.thinking_opened)
            self._lease.release()
            raise
        except BaseException:
            self._lease.release()
            raise

    def pieces(self) -> Iterator[Piece]:
        """The chunks as ``(kind, text)`` pieces: "thinking" (a thinking model's reasoning) or "content", by the rule
        the final :attr:`result` follows (:mod:`ovgenai_c.provider.thinking`)."""
        return pieces(self, self.thinking_opened)

    @property
    def text(self) -> str:
        """The text streamed so far."""
        return self._ts.text

    def close(self) -> None:
        """Cancel natively (if still running), wait for the C call to return, give the session back."""
        try:
            self._ts.close()
        finally:
            self._lease.release()

    def __enter__(self) -> "ChatStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # No __del__: a forgotten stream never blocks a finalizer. The text stream's own finalizer cancels natively
    # and the lease's finalizer queues its release for the pool.
