"""A thread-safe pool of pipelines ("sessions") shared by requests.

A session is keyed by the model's identity — its resolved path plus a cheap digest of its files (name, size and
mtime of each file, hashed) — and the device, properties and library. Requests take a reference-counted
:class:`Lease`; released sessions stay warm, and are evicted when idle longer than ``ttl`` seconds or when more
than ``max_resident`` sessions are resident (least recently used first). A leased session is never evicted.
:meth:`SessionPool.close` drains the pool: no new leases, idle sessions closed now, leased ones when they come
back (it waits for them up to ``timeout``).
"""
from __future__ import annotations

import atexit
import collections
import hashlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from .errors import PoolClosedError

Key = Tuple[str, str, str, Tuple[Tuple[str, str], ...], str]


def model_digest(path: Union[str, os.PathLike]) -> str:
    """A cheap digest of a model's files: (name, size, mtime_ns) of each file, hashed. Changes when they do."""
    p = Path(path)
    h = hashlib.sha256()
    files = sorted(x for x in p.iterdir() if x.is_file()) if p.is_dir() else [p]
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        h.update(f"{f.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:16]


def _library_id(library: Any) -> str:
    if library is None:
        return ""
    path = getattr(library, "path", library)
    return os.path.realpath(os.fspath(path))


def session_key(model_path: Union[str, os.PathLike], device: str = "CPU", properties: Optional[Dict[str, Any]] = None,
                library: Any = None) -> Key:
    real = os.path.realpath(os.fspath(model_path))
    props = tuple(sorted((str(k), str(v)) for k, v in (properties or {}).items()))
    return (real, model_digest(real), device, props, _library_id(library))


def _default_factory(path: str, device: str, properties: Dict[str, Any], library: Any) -> Any:
    from ..pipeline import LLMPipeline

    return LLMPipeline(path, device, library=library, **properties)


@dataclass(eq=False)
class _Session:
    key: Key
    ready: threading.Event = field(default_factory=threading.Event)
    pipeline: Any = None
    error: Optional[BaseException] = None
    refs: int = 0
    last_used: float = 0.0
    load_time: float = 0.0
    uses: int = 0


class Lease:
    """A reference to a pooled pipeline; :meth:`release` (or leaving the ``with`` block) gives it back."""

    def __init__(self, pool: "SessionPool", session: _Session, reused: bool) -> None:
        self._pool = pool
        self._session = session
        self.reused = reused
        self._released = False
        self._lock = threading.Lock()

    @property
    def pipeline(self) -> Any:
        if self._released:
            raise PoolClosedError("this lease was released")
        return self._session.pipeline

    @property
    def key(self) -> Key:
        return self._session.key

    @property
    def load_time(self) -> float:
        """Seconds it took to create the pipeline (when it was created, not for this lease)."""
        return self._session.load_time

    def release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self._pool._release(self._session)

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __del__(self) -> None:
        # A forgotten lease: never take the pool's lock from a finalizer (it may run inside the pool, or on
        # any thread); queue the release, done by the pool's next operation.
        if not self._released:
            self._released = True
            self._pool._pending.append(self._session)


class SessionPool:
    """Pipelines shared across requests. ``clock`` (seconds, monotonic) and ``factory`` are injectable."""

    def __init__(self, ttl: Optional[float] = 600.0, max_resident: int = 2,
                 factory: Optional[Callable[[str, str, Dict[str, Any], Any], Any]] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_resident < 1:
            raise ValueError("max_resident must be >= 1")
        if ttl is not None and ttl < 0:
            raise ValueError("ttl must be >= 0 (or None for no expiry)")
        self.ttl = ttl
        self.max_resident = max_resident
        self._factory = factory or _default_factory
        self._clock = clock
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._sessions: Dict[Key, _Session] = {}
        self._pending: "collections.deque[_Session]" = collections.deque()  # releases queued by finalizers
        self._closed = False
        self.stats = {"created": 0, "reused": 0, "evicted": 0, "closed": 0}

    # --- leases ------------------------------------------------------------------------------------
    def lease(self, model_path: Union[str, os.PathLike], device: str = "CPU",
              properties: Optional[Dict[str, Any]] = None, library: Any = None) -> Lease:
        """A lease on the session for this model/device/properties/library, creating it if needed."""
        key = session_key(model_path, device, properties, library)
        while True:
            with self._lock:
                self._drain_pending()
                if self._closed:
                    raise PoolClosedError("the session pool is closed")
                sess = self._sessions.get(key)
                creating = sess is None
                if creating:
                    sess = _Session(key)
                    self._sessions[key] = sess
                sess.refs += 1
            if creating:
                t0 = time.perf_counter()
                try:
                    sess.pipeline = self._factory(key[0], device, dict(properties or {}), library)
                except BaseException as exc:
                    with self._lock:
                        sess.error = exc
                        self._sessions.pop(key, None)
                        sess.refs -= 1
                        sess.ready.set()
                    raise
                sess.load_time = time.perf_counter() - t0
                with self._lock:
                    self.stats["created"] += 1
                    sess.uses += 1
                    sess.last_used = self._clock()
                    sess.ready.set()
                to_close = self._collect()
                self._close_all(to_close)
                return Lease(self, sess, reused=False)
            sess.ready.wait()
            if sess.error is not None:
                with self._lock:
                    sess.refs -= 1
                continue  # the creator failed: try (and fail) ourselves, with our own error
            with self._lock:
                self.stats["reused"] += 1
                sess.uses += 1
                sess.last_used = self._clock()
            return Lease(self, sess, reused=True)

    def _release(self, sess: _Session) -> None:
        with self._lock:
            sess.refs -= 1
            sess.last_used = self._clock()
            self._cond.notify_all()
        self._close_all(self._collect())

    def _drain_pending(self) -> None:
        """Apply releases queued by finalizers (called with the lock held)."""
        while self._pending:
            try:
                sess = self._pending.popleft()
            except IndexError:
                break
            sess.refs -= 1
            sess.last_used = self._clock()
            self._cond.notify_all()

    # --- eviction ----------------------------------------------------------------------------------
    def _collect(self) -> List[_Session]:
        """Remove (and return, to be closed outside the lock) the sessions to evict now."""
        out: List[_Session] = []
        with self._lock:
            self._drain_pending()
            now = self._clock()
            idle = [s for s in self._sessions.values() if s.refs == 0 and s.ready.is_set() and s.error is None]
            if self._closed:
                out = idle
            else:
                if self.ttl is not None:
                    out = [s for s in idle if now - s.last_used >= self.ttl]
                resident = [s for s in self._sessions.values() if s not in out]
                excess = len(resident) - self.max_resident
                if excess > 0:
                    lru = sorted((s for s in idle if s not in out), key=lambda s: s.last_used)
                    out.extend(lru[:excess])
            for s in out:
                self._sessions.pop(s.key, None)
            self.stats["evicted" if not self._closed else "closed"] += len(out)
        return out

    @staticmethod
    def _close_all(sessions: List[_Session]) -> None:
        for s in sessions:
            try:
                if s.pipeline is not None:
                    s.pipeline.close()
            except Exception:
                pass

    def evict_idle(self) -> int:
        """Apply the TTL and the resident cap now (also done on every lease and release). Returns how many."""
        gone = self._collect()
        self._close_all(gone)
        return len(gone)

    # --- introspection -----------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def sessions(self) -> List[Dict[str, Any]]:
        """A snapshot: one dict per resident session."""
        with self._lock:
            self._drain_pending()
            return [{"path": s.key[0], "digest": s.key[1], "device": s.key[2], "properties": dict(s.key[3]),
                     "refs": s.refs, "uses": s.uses, "idle_for": None if s.refs else self._clock() - s.last_used,
                     "load_time": s.load_time} for s in self._sessions.values() if s.ready.is_set()]

    @property
    def closed(self) -> bool:
        return self._closed

    # --- shutdown ----------------------------------------------------------------------------------
    def close(self, timeout: Optional[float] = 30.0) -> bool:
        """Drain: refuse new leases, close idle sessions, wait up to ``timeout`` s for leased ones to come
        back and close them. Returns True when every session was closed."""
        with self._lock:
            self._closed = True
        self._close_all(self._collect())
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                self._drain_pending()
                if not any(s.refs > 0 for s in self._sessions.values()):
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._cond.wait(0.1 if left is None else min(left, 0.1))
        self._close_all(self._collect())
        with self._lock:
            return not self._sessions

    def __enter__(self) -> "SessionPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_default_pool: Optional[SessionPool] = None
_default_lock = threading.Lock()


def default_pool() -> SessionPool:
    """The process-wide pool used by providers that are not given one (closed at interpreter exit)."""
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool.closed:
            _default_pool = SessionPool()
        return _default_pool


@atexit.register
def _shutdown_default_pool() -> None:
    pool = _default_pool
    if pool is not None:
        pool.close(timeout=5.0)
