"""Which models the server serves, and the pipelines behind each: a :class:`ModelSlot` per loaded model holds
``parallel`` providers (each with its own session pool, so its own pipeline) — or, on the bundled backend,
``batch_size`` leases of one :class:`~ovgenai_c.provider.batching.BatchedProvider` (one continuous-batching
pipeline whose decode steps the concurrent requests share), or for a remote model (``remote_models``: another
OpenAI-compatible endpoint) ``batch_size`` leases of one :class:`~ovgenai_c.provider.RemoteProvider` (each request
its own HTTP connection) — and a bounded FIFO of waiting requests. Runs on the server's event loop; provider work
happens in worker threads."""
from __future__ import annotations

import collections
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Deque, Dict, List, Optional

import anyio

from ..provider import Catalog, ModelEntry, Provider, SessionPool
from ..provider.batching import BatchedProvider, can_batch
from ..provider.errors import CapabilityNotSupportedError, CatalogError
from ..provider.remote import RemoteProvider, is_remote_spec, parse_spec
from ..provider.transcription import is_whisper_folder
from .config import ServeConfig
from .errors import HTTPError, QueueFullError, RequestTimeoutError

ProviderFactory = Callable[[Path, int], Any]  # (model path, pipeline index) -> Provider


def default_provider_factory(library: Any = None) -> ProviderFactory:
    def make(path: Path, index: int) -> Provider:
        return Provider(path, library=library, pool=SessionPool(ttl=None, max_resident=1))
    return make


@dataclass
class SlotStats:
    requests: int = 0
    completed: int = 0
    cancelled: int = 0
    failed: int = 0
    rejected: int = 0
    last_finish_reason: Optional[str] = None
    last_completion_tokens: Optional[int] = None


class _Waiter:
    def __init__(self) -> None:
        self.event = anyio.Event()
        self.provider: Any = None
        self.gone = False


class ModelSlot:
    """The pipelines of one model and the requests waiting for them."""

    def __init__(self, name: str, path: Path, providers: List[Any], max_queue: int) -> None:
        self.name = name
        self.path = path
        self.providers = providers
        self.max_queue = max_queue
        self._free: Deque[Any] = collections.deque(providers)
        self._waiters: Deque[_Waiter] = collections.deque()
        self.stats = SlotStats()
        self.last_used = time.monotonic()
        self.loaded_at = time.time()

    @property
    def running(self) -> int:
        return len(self.providers) - len(self._free)

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.gone and w.provider is None)

    @property
    def busy(self) -> bool:
        return self.running > 0 or self.waiting > 0

    async def acquire(self, timeout: Optional[float]) -> Any:
        """A free provider; waits in FIFO order. Full queue → 429; waiting past ``timeout`` → 504."""
        self.stats.requests += 1
        self.last_used = time.monotonic()
        if self._free and not self.waiting:
            return self._free.popleft()
        if self.waiting >= self.max_queue:
            self.stats.rejected += 1
            raise QueueFullError(self.name, self.running, self.waiting)
        waiter = _Waiter()
        self._waiters.append(waiter)
        try:
            with anyio.fail_after(timeout):
                await waiter.event.wait()
            return waiter.provider
        except BaseException as exc:
            if waiter.provider is not None:
                self.release(waiter.provider)  # handed over just as we gave up: pass it on
            else:
                waiter.gone = True
                try:
                    self._waiters.remove(waiter)
                except ValueError:
                    pass
            if isinstance(exc, TimeoutError):
                raise RequestTimeoutError(timeout or 0.0, "waiting in the queue") from None
            raise

    def release(self, provider: Any) -> None:
        """Give a provider back: to the first waiter still waiting, else to the free list."""
        self.last_used = time.monotonic()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.gone:
                waiter.provider = provider
                waiter.event.set()
                return
        self._free.append(provider)

    @property
    def batched(self) -> bool:
        """Whether the model's requests share one continuous-batching pipeline."""
        return isinstance(self.providers[0], BatchedProvider)

    @property
    def remote(self) -> bool:
        """Whether the model is answered by another endpoint (a remote spec)."""
        return isinstance(self.providers[0], RemoteProvider)

    @property
    def scheduling(self) -> str:
        """``"continuous_batching"`` (one batching pipeline shared by the slot's requests), ``"remote"`` (another
        endpoint schedules them) or ``"pool"``."""
        return "continuous_batching" if self.batched else "remote" if self.remote else "pool"

    def distinct_providers(self) -> List[Any]:
        """Each provider once (a batched slot holds one provider several times)."""
        seen: Dict[int, Any] = {}
        for p in self.providers:
            seen.setdefault(id(p), p)
        return list(seen.values())

    def sessions(self) -> List[Dict[str, Any]]:
        out: List[Dict[str, Any]] = []
        for p in self.distinct_providers():
            pool = getattr(p, "pool", None)
            if pool is not None:
                out.extend(pool.sessions())
            elif hasattr(p, "sessions"):
                out.extend(p.sessions())
        return out

    def load(self) -> None:
        """Load every pipeline of the slot now (not on the event loop). A Whisper provider that refuses to
        transcribe on this library loads nothing (its requests get that refusal)."""
        for p in self.distinct_providers():
            load = getattr(p, "load", None)
            if load is not None and getattr(p, "transcribe_refused", None) is None:
                load()

    def close(self) -> None:
        for p in self.distinct_providers():
            pool = getattr(p, "pool", None)
            if pool is not None:
                pool.close(timeout=30.0)
            close = getattr(p, "close", None)  # a batching pipeline, a Whisper provider's own pipeline
            if close is not None:
                close()


class ModelRegistry:
    """Model names → slots. Names are catalog names (``--models-root``); no name (or the default model's name)
    is the default model; an Ollama-style ``:latest`` tag is ignored."""

    def __init__(self, config: ServeConfig, factory: ProviderFactory) -> None:
        self.config = config
        self.catalog = Catalog(config.models_root)
        self.factory = factory
        self.remote: Dict[str, str] = dict(config.remote_models)  # name -> remote spec
        default = config.default_model
        self.default_path: Any = None  # a Path, or the spec of a remote default model
        self.default_name: Optional[str] = None
        if is_remote_spec(default):
            url, model = parse_spec(default)  # type: ignore[arg-type]
            self.default_name = model or url.split("://", 1)[1]
            self.default_path = self.remote.setdefault(self.default_name, default)  # type: ignore[arg-type]
        elif default is not None:
            self.default_path = Path(default)
            self.default_name = self._name_for(self.default_path)
        self._slots: Dict[str, ModelSlot] = {}
        self._lock = anyio.Lock()

    def _name_for(self, path: Path) -> str:
        root = os.path.realpath(self.catalog.root)
        real = os.path.realpath(path)
        if real.startswith(root.rstrip(os.sep) + os.sep):
            return Path(os.path.relpath(real, root)).as_posix()
        return path.parent.name if path.name == "ir" else path.name

    def entries(self) -> List[ModelEntry]:
        """Every servable local model: the catalog's, plus the default model when it lives elsewhere (the remote
        models are :meth:`remote_names`)."""
        items = [e for e in self.catalog.list() if e.name not in self.remote]
        if self.default_path is not None and not self.is_remote(self.default_name) and \
                self.default_name not in {e.name for e in items}:
            items.insert(0, self.catalog.entry(self.default_name, self.default_path))  # type: ignore[arg-type]
        return items

    def chat_entries(self) -> List[ModelEntry]:
        """The local models that can chat: :meth:`entries` without Whisper folders (speech to text: the audio
        routes). (Both libraries serve IR folders and GGUF files.)"""
        return [e for e in self.entries() if e.format != "whisper"]

    def is_remote(self, name: Optional[str]) -> bool:
        return name is not None and name in self.remote

    def remote_names(self) -> List[str]:
        """The remote models' names (the default one first)."""
        return sorted(self.remote, key=lambda n: (n != self.default_name, n))

    def resolve(self, name: Optional[str]) -> "tuple[str, Path]":
        """(canonical name, path) of a requested model; unknown → :class:`CatalogError` (404)."""
        if name is not None and not isinstance(name, str):
            raise HTTPError(400, f"'model' must be a string, got {type(name).__name__}", "model")
        text = (name or "").strip()
        if text.endswith(":latest"):
            text = text[: -len(":latest")]
        if not text or text == self.default_name:
            if self.default_path is None:
                raise CatalogError("no model was named and the server has no default model")
            return self.default_name, self.default_path  # type: ignore[return-value]
        if text in self._slots:
            return text, self._slots[text].path
        if text in self.remote:
            return text, self.remote[text]  # type: ignore[return-value]
        entry = self.catalog.resolve(text)
        return entry.name, entry.path

    def is_speech(self, name: str, path: Any) -> bool:
        """Whether a resolved model is a Whisper (speech-to-text) model: it transcribes and cannot chat."""
        if self.is_remote(name):
            return False
        slot = self._slots.get(name)
        if slot is not None:
            return getattr(getattr(slot.providers[0], "info", None), "format", None) == "whisper"
        return is_whisper_folder(path)

    async def slot(self, name: Optional[str], purpose: Optional[str] = None) -> ModelSlot:
        """The slot of a model, loaded on first use. ``purpose`` ("chat" / "transcribe"): a model that can never
        serve it (a Whisper model for chat, any other for transcription) is refused with 400 before anything is
        loaded. A model is loaded before the least recently used idle one is unloaded to make room
        (--max-loaded-models), so a model that cannot be served unloads nothing; one whose pipelines fail to load
        after that puts the unloaded model's slot back (its pipelines load again on its next request)."""
        canonical, path = self.resolve(name)
        if purpose is not None:
            speech = self.is_speech(canonical, path)  # (a few stat() calls when not loaded: no thread hop)
            if purpose == "chat" and speech:
                raise CapabilityNotSupportedError(
                    f"model {canonical!r} is a speech-to-text (Whisper) model: it cannot chat or complete text; "
                    "send its audio to /v1/audio/transcriptions (or /v1/audio/translations)", "model")
            if purpose == "transcribe" and not speech and not self.is_remote(canonical):
                raise CapabilityNotSupportedError(
                    f"model {canonical!r} is not a Whisper model folder, so it cannot transcribe", "transcribe")
        slot = self._slots.get(canonical)
        if slot is not None:
            return slot
        async with self._lock:
            slot = self._slots.get(canonical)
            if slot is not None:
                return slot
            if canonical in self.remote:  # a remote model holds no pipeline: nothing to unload for it
                return await anyio.to_thread.run_sync(self._make_slot, canonical, path)
            self._room(canonical)  # (refused now if every loaded model is busy: nothing made yet)
            new = await anyio.to_thread.run_sync(self._new_slot, canonical, path)
            gone: Optional[ModelSlot] = None
            try:
                gone = self._room(canonical)  # again: a request may have come to the idle one meanwhile
                if gone is not None:
                    del self._slots[gone.name]
                    await anyio.to_thread.run_sync(gone.close)
                await anyio.to_thread.run_sync(new.load)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(new.close)
                    if gone is not None and gone.name not in self._slots:
                        try:  # providers only: its pipelines load on its next request
                            self._slots[gone.name] = await anyio.to_thread.run_sync(self._new_slot, gone.name,
                                                                                     gone.path)
                        except Exception:  # it loaded before; if it no longer can, its next request says why
                            pass
                raise
            self._slots[canonical] = new
            return new

    def _room(self, canonical: str) -> Optional[ModelSlot]:
        """The idle slot to unload so that ``canonical`` fits (--max-loaded-models; None: there is room);
        503 when every loaded model is busy."""
        local = [s for s in self._slots.values() if not s.remote]  # a remote model holds no pipeline
        if len(local) < self.config.max_loaded_models:
            return None
        idle = sorted((s for s in local if not s.busy), key=lambda s: s.last_used)
        if not idle:
            raise HTTPError(503, f"cannot load {canonical!r}: {len(local)} model(s) are loaded and "
                                 "all are busy (--max-loaded-models)", "model", "server_busy")
        return idle[0]

    def _new_slot(self, name: str, path: Path) -> ModelSlot:
        """A slot's providers (reading the model's files and profile: a path that is no servable model fails
        here), not registered and with nothing loaded yet."""
        if name in self.remote:
            # one provider: each request opens its own connection; the endpoint queues and batches them itself
            remote = RemoteProvider.from_spec(self.remote[name], api_key=self.config.remote_api_key,
                                              timeout=self.config.request_timeout)
            return ModelSlot(name, self.remote[name], [remote] * max(self.config.batch_size, self.config.parallel),
                             self.config.max_queue)  # type: ignore[arg-type]
        first = self.factory(path, 0)
        if self.config.batching and can_batch(first):
            providers: List[Any] = [BatchedProvider(first)] * self.config.batch_size
        else:
            providers = [first] + [self.factory(path, i) for i in range(1, self.config.parallel)]
        return ModelSlot(name, path, providers, self.config.max_queue)

    def _make_slot(self, name: str, path: Path) -> ModelSlot:
        """A new slot, registered (nothing loaded yet)."""
        slot = self._new_slot(name, path)
        self._slots[name] = slot
        return slot

    def preload_default(self) -> Optional[ModelSlot]:
        """Create the default model's slot and load its pipelines now (before serving; not on the event loop)."""
        if self.default_path is None:
            return None
        slot = self._slots.get(self.default_name) or self._make_slot(self.default_name, self.default_path)  # type: ignore[arg-type]
        slot.load()
        return slot

    def loaded(self) -> List[ModelSlot]:
        return list(self._slots.values())

    def get_loaded(self, name: str) -> Optional[ModelSlot]:
        return self._slots.get(name)

    def close(self) -> None:
        for s in list(self._slots.values()):
            s.close()
        self._slots.clear()
