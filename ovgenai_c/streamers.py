"""``StreamerBase`` and ``TextStreamer``, as openvino_genai's.

``TextStreamer(tokenizer, callback)`` turns token ids into text chunks with GenAI's rules (text_streamer.cpp): the
cache of ids is decoded after every token; a chunk is released once the text ends in a newline (then the cache is
reset), otherwise only up to what was decoded three tokens ago (a later token may still change earlier text), and
never while the text ends in an incomplete UTF-8 sequence (U+FFFD); ``end()`` flushes the rest. Lengths are counted
in UTF-8 bytes, as GenAI does. The callback gets a str and returns None/False (go on), True (stop) or a
StreamingStatus.

``StreamerBase`` is the class to subclass for a streamer of token ids: ``write(token)`` receives an int or a list
of ints — openvino_genai 2026.4's pipelines call it with a list per generation step (``[id]``) — and returns a
StreamingStatus (or a bool); ``end()`` is called at the end of generation. :func:`deliver_tokens` is what a
pipeline calls with each step's ids.
"""
from __future__ import annotations

import bisect
import copy
import operator
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from ._streaming import StreamingStatus, status_from_streamer

_REPLACEMENT = "\ufffd".encode("utf-8")
_DELAY_N_TOKENS = 3


def deliver_tokens(streamer: "StreamerBase", token_ids: Sequence[int]) -> StreamingStatus:
    """Give one generation step's new token ids to a token streamer, as GenAI does (``write([ids...])``), and map
    its return value (None/False: RUNNING, True: STOP, or a StreamingStatus). Exceptions propagate: the caller
    (never C) decides what a failing streamer means."""
    return status_from_streamer(streamer.write([int(t) for t in token_ids]))


class StreamerBase:
    """Base class for streamers: subclass it and implement ``write`` and ``end``."""

    def write(self, token: Union[int, Sequence[int]]) -> StreamingStatus:
        """Called with each new token id (an int) or several at once (a list of ints); returns a StreamingStatus
        telling generation to go on (RUNNING), stop (STOP) or cancel (CANCEL)."""
        raise NotImplementedError(f"{type(self).__name__}.write must be implemented (StreamerBase.write is abstract)")

    def end(self) -> None:
        """Called once at the end of generation; flush any cached text here."""
        raise NotImplementedError(f"{type(self).__name__}.end must be implemented (StreamerBase.end is abstract)")


def _token_id(value: Any) -> int:
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"a token id must be an int, not {type(value).__name__}") from None
    if not -(2 ** 63) <= v < 2 ** 63:
        raise TypeError(f"token id {v} does not fit in int64")
    return v


class TextStreamer(StreamerBase):
    """Decodes token ids into text and calls ``callback(text)`` with each printable chunk.

    ``detokenization_params`` takes ``skip_special_tokens`` (default True) like GenAI's.
    """

    def __init__(self, tokenizer: Any, callback: Callable[[str], Any],
                 detokenization_params: Optional[Mapping[str, Any]] = None) -> None:
        from .tokenizer import Tokenizer

        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"tokenizer must be an ovgenai_c Tokenizer, not {type(tokenizer).__name__}")
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        params = dict(detokenization_params or {})
        skip = params.pop("skip_special_tokens", True)
        if not isinstance(skip, (bool, int)):
            raise TypeError(f"skip_special_tokens must be a bool, not {type(skip).__name__}")
        self._tokenizer = tokenizer
        self._callback = callback
        self._skip_special_tokens = bool(skip)
        self._tokens: List[int] = []
        self._decoded_lengths: List[int] = []  # bytes decoded up to each position; -1 incomplete, -2 not decoded
        self._printed_len = 0

    @property
    def skip_special_tokens(self) -> bool:
        return self._skip_special_tokens

    def _decode(self, tokens: List[int]) -> bytes:
        return self._tokenizer.decode_bytes([tokens], self._skip_special_tokens)[0]

    def _emit(self, chunk: bytes) -> StreamingStatus:
        if not chunk:
            return StreamingStatus.RUNNING
        return self.write_text(chunk.decode("utf-8", "replace"))

    def write_text(self, text: str) -> StreamingStatus:
        """Give already-decoded text to the callback; returns its StreamingStatus (what a pipeline whose library
        decodes the tokens itself calls with each chunk)."""
        if not text:
            return StreamingStatus.RUNNING
        return status_from_streamer(self._callback(text))

    def write(self, token: Union[int, Sequence[int]]) -> StreamingStatus:
        """Add one token id (or several) and call the callback with whatever text is now complete."""
        if isinstance(token, (list, tuple)) or (hasattr(token, "__iter__") and not isinstance(token, (str, bytes))):
            ids = [_token_id(t) for t in token]  # type: ignore[union-attr]
            if not ids:
                return StreamingStatus.RUNNING
            if len(ids) > 1:
                self._tokens.extend(ids[:-1])
                self._decoded_lengths.extend([-2] * (len(ids) - 1))
            return self._write_one(ids[-1])
        return self._write_one(_token_id(token))

    def _write_one(self, token: int) -> StreamingStatus:
        self._tokens.append(token)
        text = self._decode(self._tokens)
        self._decoded_lengths.append(len(text))
        if text.endswith(b"\n") and len(text) > self._printed_len:
            try:  # (the callback sees the tokens the chunk came from: a TextParserStreamer gives them to its parsers)
                return self._emit(text[self._printed_len:])
            finally:
                self._tokens, self._decoded_lengths, self._printed_len = [], [], 0
        if text.endswith(_REPLACEMENT):
            self._decoded_lengths[-1] = -1
            return StreamingStatus.RUNNING
        if len(self._decoded_lengths) < _DELAY_N_TOKENS:
            return StreamingStatus.RUNNING
        position = len(self._decoded_lengths) - _DELAY_N_TOKENS
        self._compute_decoded_length(position)
        print_until = self._decoded_lengths[position]
        chunk = b""
        if print_until > -1 and print_until > self._printed_len:
            chunk = text[self._printed_len:print_until]
        status = self._emit(chunk)
        if print_until > -1 and print_until > self._printed_len:
            self._printed_len = print_until
        return status

    def _compute_decoded_length(self, position: int) -> None:
        if self._decoded_lengths[position] != -2:
            return
        text = self._decode(self._tokens[:position + 1])
        self._decoded_lengths[position] = -1 if text.endswith(_REPLACEMENT) else len(text)

    def end(self) -> None:
        """Flush the text not yet given to the callback and reset (the callback's return value is ignored)."""
        text = self._decode(self._tokens) if self._tokens else b""
        if len(text) <= self._printed_len:
            return
        chunk = text[self._printed_len:]
        self._tokens, self._decoded_lengths, self._printed_len = [], [], 0
        self._callback(chunk.decode("utf-8", "replace"))


class TextParserStreamer(TextStreamer):
    """A :class:`TextStreamer` whose text chunks go through ``parsers`` (IncrementalParser objects, in order) into a
    message dict. Subclass it and implement ``write(message)``: it gets each chunk's message (``content``: the text
    the parsers let through; whatever they added, e.g. ``reasoning_content``) and returns a StreamingStatus. A
    parser's own STOP or CANCEL status outranks it. ``get_parsed_message()`` is the whole generation's message (strings
    joined, objects merged), which ``generate()`` also returns as ``DecodedResults.parsed[0]``; a pipeline calls
    ``reset()`` before each generation.
    """

    def __init__(self, tokenizer: Any, parsers: Optional[Sequence[Any]] = None) -> None:
        from .parsers import IncrementalParser

        super().__init__(tokenizer, self._parse_chunk)
        chain = list(parsers or ())
        for i, p in enumerate(chain):
            if not isinstance(p, IncrementalParser):
                raise TypeError(f"TextParserStreamer: parsers[{i}] is a {type(p).__name__}, not an IncrementalParser")
        self._parsers = chain
        self._message: Dict[str, Any] = {"content": ""}

    def write(self, message: Any) -> StreamingStatus:  # type: ignore[override]
        """Called with each chunk's message dict; returns a StreamingStatus (None/False go on, True stops)."""
        raise NotImplementedError(f"{type(self).__name__}.write must be implemented (TextParserStreamer.write is "
                                  "abstract: it takes each chunk's message dict)")

    def write_tokens(self, token: Union[int, Sequence[int]]) -> StreamingStatus:
        """Add token ids (what ``TextStreamer.write`` takes; a pipeline that streams ids calls this) and parse the
        text they complete."""
        return TextStreamer.write(self, token)

    def _write(self, chunk: Union[str, Sequence[int]]) -> StreamingStatus:
        """Feed text (as a pipeline whose library decodes does) or token ids: openvino_genai's
        ``TextParserStreamer._write``, for tests and for feeding it by hand."""
        if isinstance(chunk, str):
            return self._parse_chunk(chunk)
        return self.write_tokens(chunk)

    def _chunk_tokens(self, text: str) -> List[int]:
        """The token ids that ``text`` — the chunk about to be given out — was decoded from, as GenAI counts them:
        all held ones for a chunk ending in a newline, else those whose decoded text ends within the chunk."""
        if text.endswith("\n"):
            return list(self._tokens)
        lengths = self._decoded_lengths
        if len(lengths) < 3:  # (fed text, or before the third token: GenAI gives none either)
            return []
        print_until = lengths[len(lengths) - 3]
        first = bisect.bisect_right(lengths, self._printed_len)  # (std::upper_bound's steps, as GenAI runs them)
        last = bisect.bisect_right(lengths, print_until)
        return self._tokens[first:last] if last >= first else []

    def _parse_chunk(self, text: str) -> StreamingStatus:
        from .parsers import concatenate

        tokens = self._chunk_tokens(text)
        delta: Dict[str, Any] = {}
        parser_status = StreamingStatus.RUNNING
        for parser in self._parsers:
            text = parser.parse(delta, text, tokens)
            if not isinstance(text, str):
                raise TypeError(f"{type(parser).__name__}.parse must return the text to go on (a str), not "
                                f"{type(text).__name__}")
            parser_status = parser.get_status()
            if parser_status != StreamingStatus.RUNNING:
                break
        delta["content"] = text
        concatenate(self._message, delta)
        status = status_from_streamer(self.write(delta))
        return parser_status if parser_status != StreamingStatus.RUNNING else status

    def get_parsed_message(self) -> Dict[str, Any]:
        """The message accumulated since the last reset (a copy)."""
        return copy.deepcopy(self._message)

    def reset(self) -> None:
        """Start a new message and reset every parser (a pipeline does this before each generation)."""
        self._message = {"content": ""}
        for parser in self._parsers:
            parser.reset()
