"""OpenAI-compatible speech to text: POST /v1/audio/transcriptions and /v1/audio/translations (multipart/form-data,
OpenAI's shape: ``file``, ``model``, ``language``, ``prompt``, ``response_format`` json | text | verbose_json,
``temperature`` 0 to 1, ``timestamp_granularities[]`` segment and / or word), served by a Whisper model's provider.

Files are WAV (integer PCM, any rate and channel count: see :mod:`ovgenai_c.audio`) up to
:data:`MAX_AUDIO_BYTES` (OpenAI's 25 MB). A temperature above 0 samples the tokens (greedy at 0, the default) where the library
can (the bundled backend's extra sets a Whisper config's sampling fields). What the GenAI C ABI cannot do is refused
with 400 naming the field: a temperature above 0 elsewhere (Whisper configs take no base fields through the C ABI),
word timestamps where the library has none (the C ABI; the bundled backend has them: ``timestamp_granularities[]=word`` with verbose_json gives OpenAI's
``words``), srt / vtt output (not implemented here). A request that exceeds the server's timeout gets 504; on the bundled backend its
transcription is stopped first, elsewhere (the C ABI cannot cancel one) it finishes on the pipeline's thread and the
next request on that pipeline waits for it.

``stream=true`` (OpenAI's streaming transcription, json or text format): server-sent events, a
``transcript.text.delta`` per piece of text as it is decoded, then ``transcript.text.done`` with the whole text (an
``error`` object instead when the transcription fails); the bundled backend streams (its extra), elsewhere the field
is refused with 400. A client that goes away stops the transcription at its next piece of text.
"""
from __future__ import annotations

import asyncio
import io
import threading
import time
from typing import Any, Dict, List, Optional

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from .errors import HTTPError, RequestTimeoutError, bad_request, openai_body, to_http
from .http import CleanupStreamingResponse, endpoint, sse as _sse

MAX_AUDIO_BYTES = 25 * 1024 * 1024
FORMATS = ("json", "text", "verbose_json")
FIELDS = {"file", "model", "language", "prompt", "response_format", "temperature", "timestamp_granularities[]",
          "timestamp_granularities", "stream"}
_END = object()


def _text_field(form: Any, name: str) -> Optional[str]:
    value = form.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad_request(f"{name!r} must be a text field, not a file", name)
    return value


def verbose_segments(segments: Optional[List[Dict[str, Any]]], temperature: float = 0.0) -> List[Dict[str, Any]]:
    """OpenAI's segment objects from the provider's (decoded at ``temperature``); what the C ABI does not return
    (token ids, log-probabilities, compression ratio, no-speech probability) is empty or null, never invented."""
    out = []
    for i, seg in enumerate(segments or []):
        out.append({"id": i, "seek": int(round(seg["start"] * 100)), "start": seg["start"], "end": seg["end"],
                    "text": seg["text"], "tokens": [], "temperature": temperature, "avg_logprob": None,
                    "compression_ratio": None, "no_speech_prob": None})
    return out


def _check_sampling(provider: Any, temperature: float) -> None:
    """A temperature above 0 needs a provider that samples transcriptions: else 400 naming the field."""
    if temperature:
        refused = getattr(provider, "transcribe_sampling_refused", "this model's provider decodes greedily only")
        if refused is not None:
            raise bad_request(f"temperature {temperature}: {refused}", "temperature", "unsupported_parameter")


class AudioRoutes:
    def __init__(self, state: Any) -> None:
        self.state = state

    def routes(self) -> List[Route]:
        return [Route("/v1/audio/transcriptions", self.transcriptions, methods=["POST"]),
                Route("/v1/audio/translations", self.translations, methods=["POST"])]

    @endpoint(ollama=False)
    async def transcriptions(self, request: Request) -> Response:
        return await self._run(request, None)  # no task: the model's own (an English-only model takes none)

    @endpoint(ollama=False)
    async def translations(self, request: Request) -> Response:
        return await self._run(request, "translate")

    async def _form(self, request: Request) -> Any:
        declared = request.headers.get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > MAX_AUDIO_BYTES:
            raise HTTPError(413, f"request body of {int(declared)} bytes is larger than the audio limit of "
                                 f"{MAX_AUDIO_BYTES} bytes", code="request_too_large")
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            raise bad_request("the request must be multipart/form-data with the audio in the 'file' field "
                              "(OpenAI's audio API shape)")
        try:
            return await request.form(max_files=1, max_fields=16)
        except AssertionError as exc:  # Starlette without python-multipart
            raise HTTPError(500, f"multipart forms need python-multipart (the 'serve' extra): {exc}",
                            code="internal_error") from None
        except Exception as exc:  # a malformed body (starlette's MultiPartException and kin)
            raise bad_request(f"cannot read the multipart form: {exc}") from None

    async def _run(self, request: Request, task: Optional[str]) -> Response:
        form = await self._form(request)
        try:
            return await self._answer(form, task)
        finally:
            await form.close()

    async def _answer(self, form: Any, task: Optional[str]) -> Response:
        for name in form.keys():
            if name not in FIELDS:
                raise bad_request(f"unknown or unsupported parameter {name!r}", name, "unknown_parameter")
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise bad_request("'file' (the audio, a WAV file) is required", "file")
        fmt = _text_field(form, "response_format") or "json"
        if fmt not in FORMATS:
            raise bad_request(f"response_format {fmt!r} is not supported (json, text or verbose_json)",
                              "response_format", "unsupported_parameter")
        temperature = 0.0
        text_temperature = _text_field(form, "temperature")
        if text_temperature is not None:
            try:
                temperature = float(text_temperature)
            except ValueError:
                raise bad_request(f"temperature must be a number, got {text_temperature!r}", "temperature") from None
            if not 0.0 <= temperature <= 1.0:  # (OpenAI's range)
                raise bad_request(f"temperature must be between 0 and 1, got {text_temperature!r}", "temperature",
                                  "invalid_value")
        granularities = set(form.getlist("timestamp_granularities[]") + form.getlist("timestamp_granularities"))
        unknown = granularities - {"segment", "word"}
        if unknown:
            raise bad_request(f"timestamp_granularities[] {sorted(unknown)[0]!r} is not one of segment, word",
                              "timestamp_granularities[]", "invalid_value")
        words = "word" in granularities
        if words and fmt != "verbose_json":
            raise bad_request("timestamp_granularities[]=word needs response_format verbose_json (as OpenAI's)",
                              "timestamp_granularities[]", "unsupported_parameter")
        stream = (_text_field(form, "stream") or "false").strip().lower()
        if stream not in ("true", "false"):
            raise bad_request(f"stream must be true or false, got {stream!r}", "stream")
        if stream == "true" and fmt == "verbose_json":
            raise bad_request("stream is available with response_format json or text (as OpenAI's), not "
                              "verbose_json", "stream", "unsupported_parameter")
        language = _text_field(form, "language") or None
        prompt = _text_field(form, "prompt") or None
        data = await upload.read()
        if len(data) > MAX_AUDIO_BYTES:
            raise HTTPError(413, f"the audio file is larger than the limit of {MAX_AUDIO_BYTES} bytes",
                            code="request_too_large")
        from ..audio import read_wav

        buffer = io.BytesIO(data)
        buffer.name = upload.filename or "the uploaded audio"
        samples = await anyio.to_thread.run_sync(read_wav, buffer)
        if stream == "true":
            return await self._stream(_text_field(form, "model"), samples, task, language, prompt, temperature)
        text = await self._transcribe(_text_field(form, "model"), samples, task, language, prompt,
                                      timestamps=fmt == "verbose_json", words=words, temperature=temperature)
        if fmt == "text":
            return PlainTextResponse(text.text)
        if fmt == "json":
            return JSONResponse({"text": text.text})
        body = {"task": text.task, "language": text.language, "duration": text.duration, "text": text.text}
        if not words or "segment" in granularities:  # (OpenAI: segments unless only word timings were asked)
            body["segments"] = verbose_segments(text.segments, temperature)
        if words:
            body["words"] = text.words or []
        return JSONResponse(body)

    async def _transcribe(self, model: Optional[str], samples: Any, task: Optional[str], language: Optional[str],
                          prompt: Optional[str], timestamps: bool, words: bool = False,
                          temperature: float = 0.0) -> Any:
        registry, timeout = self.state.registry, self.state.config.request_timeout
        started = time.monotonic()
        slot = await registry.slot(model, "transcribe")
        provider = await slot.acquire(timeout)
        try:
            if words:
                refused = getattr(provider, "transcribe_words_refused", "this model's provider has no word timings")
                if refused is not None:
                    raise bad_request(f"timestamp_granularities[]=word: {refused}", "timestamp_granularities[]",
                                      "unsupported_parameter")
            _check_sampling(provider, temperature)
            left = None if timeout is None else timeout - (time.monotonic() - started)
            if left is not None and left <= 0:
                raise RequestTimeoutError(timeout or 0.0, "waiting in the queue")

            def run() -> Any:
                return provider.transcribe(samples, language=language, task=task, timestamps=timestamps,
                                           prompt=prompt, timeout=left, words=words,
                                           temperature=temperature or None)

            result = await anyio.to_thread.run_sync(run)
        except BaseException:
            slot.stats.failed += 1
            raise
        finally:
            slot.release(provider)
        slot.stats.completed += 1
        return result

    async def _stream(self, model: Optional[str], samples: Any, task: Optional[str], language: Optional[str],
                      prompt: Optional[str], temperature: float = 0.0) -> Response:
        """The transcription as server-sent events (the provider's on_text, relayed from the pipeline's thread)."""
        registry, timeout = self.state.registry, self.state.config.request_timeout
        started = time.monotonic()
        slot = await registry.slot(model, "transcribe")
        provider = await slot.acquire(timeout)
        try:
            refused = getattr(provider, "transcribe_stream_refused", "this model's provider cannot stream")
            if refused is not None:
                raise bad_request(f"stream: {refused}", "stream", "unsupported_parameter")
            _check_sampling(provider, temperature)
            left = None if timeout is None else timeout - (time.monotonic() - started)
            if left is not None and left <= 0:
                raise RequestTimeoutError(timeout or 0.0, "waiting in the queue")
        except BaseException:
            slot.stats.failed += 1
            slot.release(provider)
            raise
        loop = asyncio.get_running_loop()
        pieces: "asyncio.Queue[Any]" = asyncio.Queue()
        gone = threading.Event()  # the response ended early (the client left): stop at the next piece

        def on_text(piece: str) -> bool:
            loop.call_soon_threadsafe(pieces.put_nowait, piece)
            return gone.is_set()

        def run() -> Any:
            return provider.transcribe(samples, language=language, task=task, prompt=prompt, timeout=left,
                                       on_text=on_text, temperature=temperature or None)

        job = asyncio.ensure_future(anyio.to_thread.run_sync(run))
        job.add_done_callback(lambda _: pieces.put_nowait(_END))  # (on the loop: after every piece)

        async def events() -> Any:
            while True:
                piece = await pieces.get()
                if piece is _END:
                    break
                if piece:
                    yield _sse({"type": "transcript.text.delta", "delta": piece})
            try:
                result = job.result()
            except Exception as exc:
                yield _sse(openai_body(to_http(exc)))
                return
            yield _sse({"type": "transcript.text.done", "text": result.text})

        async def finish() -> None:
            gone.set()
            try:
                await asyncio.shield(job)
                slot.stats.completed += 1
            except Exception:  # (reported to the client in the stream)
                slot.stats.failed += 1
            finally:
                slot.release(provider)

        return CleanupStreamingResponse(events(), finish, media_type="text/event-stream",
                                        headers={"Cache-Control": "no-cache"})


__all__ = ["AudioRoutes", "MAX_AUDIO_BYTES", "verbose_segments"]
