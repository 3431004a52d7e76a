"""A thinking model's reasoning, told apart from its answer: ``<think>reasoning</think>answer``.

One rule for a whole answer (:func:`split_thinking`) and for one arriving in chunks (:class:`ThinkingSplitter`), so
that what a stream gives piece by piece adds up to what the finished answer says:

- an answer that starts (after whitespace) with ``<think>`` reasons until ``</think>``; so does one whose prompt
  already opened the tag (a template ending its generation prompt with ``<think>``: ``opened=True``);
- reasoning that is never closed (the answer was cut) is all reasoning; an answer that does not start with the tag
  is all answer, tags included (nothing is dropped);
- the reasoning is stripped of the whitespace around it, the answer of the whitespace after ``</think>``.

A splitter holds back only what may still change meaning: the start of a tag split across chunks, and whitespace
that may turn out to end the reasoning.
"""
from __future__ import annotations

from typing import Iterable, Iterator, List, Optional, Tuple

OPEN_TAG, CLOSE_TAG = "<think>", "</think>"
THINKING, CONTENT = "thinking", "content"

Piece = Tuple[str, str]  # (THINKING or CONTENT, text)


def opens_thinking(prompt: str) -> bool:
    """Whether a rendered prompt leaves the model inside the reasoning (it ends with the open tag)."""
    return prompt.rstrip().endswith(OPEN_TAG)


def _tag_prefix_length(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` are the start of ``tag`` (the longest such, shorter than it)."""
    for n in range(min(len(text), len(tag) - 1), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


class ThinkingSplitter:
    """Splits a streamed answer into reasoning and answer pieces (see the module's rule): :meth:`feed` each chunk,
    :meth:`finish` at the end; each returns the pieces now certain, in order."""

    def __init__(self, opened: bool = False) -> None:
        self._state = "reasoning_start" if opened else "start"
        self._held = ""
        self.thought = opened  # whether the answer has (had) reasoning

    def feed(self, text: str) -> List[Piece]:
        self._held += text
        out: List[Piece] = []
        while self._step(out):
            pass
        return out

    def finish(self) -> List[Piece]:
        held, self._held = self._held, ""
        if self._state == "start" and held:
            return [(CONTENT, held)]  # (whitespace, or the start of an open tag that never came)
        if self._state == "reasoning" and held.strip():
            return [(THINKING, held.rstrip())]  # (a cut answer: what looked like the start of the close tag)
        return []

    def _step(self, out: List[Piece]) -> bool:
        """One change of state, or emit what is certain and wait (False)."""
        held, state = self._held, self._state
        if state == "start":
            s = held.lstrip()
            if s.startswith(OPEN_TAG):
                self._held, self._state, self.thought = s[len(OPEN_TAG):], "reasoning_start", True
                return True
            if not s or OPEN_TAG.startswith(s):
                return False  # whitespace, or maybe the open tag: wait
            self._state = "content"
            return True
        if state == "reasoning_start":
            s = held.lstrip()
            self._held = s
            if not s:
                return False
            self._state = "reasoning"
            return True
        if state == "reasoning":
            end = held.find(CLOSE_TAG)
            if end != -1:
                if held[:end].rstrip():
                    out.append((THINKING, held[:end].rstrip()))
                self._held, self._state = held[end + len(CLOSE_TAG):], "after"
                return True
            keep = _tag_prefix_length(held, CLOSE_TAG)
            body = held[:len(held) - keep]
            certain = body.rstrip()  # (trailing whitespace may end the reasoning: held until more text comes)
            if certain:
                out.append((THINKING, certain))
            self._held = held[len(certain):]
            return False
        if state == "after":
            s = held.lstrip()
            self._held = ""
            if not s:
                return False
            self._held, self._state = s, "content"
            return True
        if held:  # content
            out.append((CONTENT, held))
            self._held = ""
        return False


def split_thinking(text: str, opened: bool = False) -> Tuple[Optional[str], str]:
    """(reasoning, answer) of a whole answer by the module's rule; reasoning None when the answer has none."""
    splitter = ThinkingSplitter(opened)
    parts = splitter.feed(text) + splitter.finish()
    thinking = "".join(t for kind, t in parts if kind == THINKING)
    content = "".join(t for kind, t in parts if kind == CONTENT)
    return (thinking if splitter.thought else None), content


def pieces(chunks: Iterable[str], opened: Optional[bool]) -> Iterator[Piece]:
    """A streamed answer's chunks as ``(kind, text)`` pieces: split by the rule where the model thinks (``opened``
    not None: whether its prompt opened the reasoning), else all content."""
    if opened is None:
        for chunk in chunks:
            if chunk:
                yield CONTENT, chunk
        return
    splitter = ThinkingSplitter(opened)
    for chunk in chunks:
        yield from splitter.feed(chunk)
    yield from splitter.finish()


__all__ = ["CLOSE_TAG", "CONTENT", "OPEN_TAG", "THINKING", "ThinkingSplitter", "opens_thinking", "pieces",
           "split_thinking"]

