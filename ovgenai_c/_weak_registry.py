"""A registry of objects held weakly that any thread may list while others add to it and the collector drops from it.

``weakref.WeakSet`` lists its members with a Python-level loop, and its removal callback checks "is anyone listing?"
and then discards: a collection on one thread that drops a member between that check and the discard, while another
thread has just begun listing, breaks the listing with "set changed size during iteration". PyPy, whose collections
run callbacks on whichever thread allocates, met it when an owner thread freeing a dropped pipeline listed its
unread results (the free then never ran: one native pipeline left live). Here every change is one dict operation and
a listing works on a copy taken in one, so neither can see the other half-done.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, Generic, Iterator, List, TypeVar

T = TypeVar("T")


class WeakRegistry(Generic[T]):
    """Objects held weakly (each at most once); :meth:`snapshot` lists the live ones."""

    __slots__ = ("_refs", "_drop", "__weakref__")

    def __init__(self) -> None:
        refs: Dict[Any, None] = {}

        def drop(ref: Any, refs: Dict[Any, None] = refs) -> None:  # (the collector's callback: keeps no self)
            refs.pop(ref, None)

        self._refs = refs
        self._drop: Callable[[Any], None] = drop

    def add(self, obj: T) -> None:
        # a weak reference hashes and compares as its object while that lives: adding one twice keeps one entry
        self._refs[weakref.ref(obj, self._drop)] = None

    def discard(self, obj: T) -> None:
        self._refs.pop(weakref.ref(obj), None)

    def snapshot(self) -> List[T]:
        """The objects registered and still alive, now."""
        out = []
        for ref in self._refs.copy():
            obj = ref()
            if obj is not None:
                out.append(obj)
        return out

    def __iter__(self) -> Iterator[T]:
        return iter(self.snapshot())

    def clear(self) -> None:
        self._refs.clear()

    def __len__(self) -> int:
        return len(self._refs)
