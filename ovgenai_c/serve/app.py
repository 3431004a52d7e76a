"""The ASGI application: OpenAI routes under /v1, Ollama routes under /api, optional bearer auth."""
from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from typing import Any, AsyncIterator, Dict, Optional

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from .audio_api import AudioRoutes
from .config import ServeConfig
from .heap import CHECK_EVERY_S, HeapKeeper, collect_step_bytes
from .http import BearerAuth
from .ollama_api import OllamaRoutes
from .openai_api import OpenAIRoutes
from .responses_api import ResponsesRoutes
from .registry import ModelRegistry, ProviderFactory, default_provider_factory


def _caps(provider: Any) -> Dict[str, Any]:
    caps = getattr(provider, "capabilities", None)
    return {k: getattr(caps, k, None) for k in ("chat", "context_length", "max_output_tokens", "transcribe")}


def scheduling(slot: Any) -> Dict[str, Any]:
    """How a model's concurrent requests are run: ``mode`` is the slot's own ``scheduling`` attribute when it has one
    (e.g. ``"continuous_batching"``), else ``"pool"`` (one request at a time per pipeline); ``pipelines`` = how many."""
    providers = getattr(slot, "providers", [])
    distinct = slot.distinct_providers() if hasattr(slot, "distinct_providers") else providers
    mode = getattr(slot, "scheduling", None) or "pool"
    out: Dict[str, Any] = {"mode": mode, "pipelines": len(distinct)}
    if mode == "continuous_batching":
        out["batch_size"] = len(providers)  # requests that may share its steps
    return out


@dataclass
class ServerState:
    config: ServeConfig
    registry: ModelRegistry


def create_app(config: ServeConfig, provider_factory: Optional[ProviderFactory] = None,
               library: Any = None) -> Starlette:
    """The server for ``config``. ``provider_factory(path, index)`` makes the provider of pipeline ``index`` of a
    model (default: a :class:`~ovgenai_c.provider.Provider` on ``library`` with its own session pool).
    ``app.state.server`` is the :class:`ServerState` (registry, slots, stats)."""
    config.check()
    keeper = HeapKeeper(collect_step_bytes())  # (checks OVGENAI_C_SERVE_COLLECT_MB before anything loads)
    registry = ModelRegistry(config, provider_factory or default_provider_factory(library))
    state = ServerState(config, registry)

    async def root(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ovgenai_c is running")  # what Ollama answers at / (clients probe it)

    async def info(request: Request) -> JSONResponse:
        """Who this is and which models it serves (``ovgenai-c generate`` checks it before using the server)."""
        from .. import __version__

        models = []
        for slot in registry.loaded():
            p = slot.providers[0]
            path = slot.path if slot.remote else os.path.realpath(slot.path)  # a remote model: its spec
            models.append({"name": slot.name, "path": path, "loaded": True,
                           "device": getattr(p, "device", None), "library_kind": getattr(p, "library_kind", None),
                           "format": getattr(getattr(p, "info", None), "format", None),
                           "capabilities": _caps(p), "default_options": dict(getattr(p, "default_options", {})),
                           "scheduling": scheduling(slot)})
        if registry.default_path is not None and registry.get_loaded(registry.default_name) is None:
            path = registry.default_path if registry.is_remote(registry.default_name) else \
                os.path.realpath(registry.default_path)
            models.insert(0, {"name": registry.default_name, "path": path, "loaded": False})
        return JSONResponse({"name": "ovgenai_c", "version": __version__, "models": models,
                             "default_model": registry.default_name,
                             "heap": {"collect_step_mb": keeper.step_bytes / (1 << 20),
                                      "collections": keeper.collections}})

    async def keep_heap() -> None:
        while True:
            try:
                keeper.check()
            except Exception as exc:  # (never takes the server down: it only stops collecting)
                print(f"ovgenai_c: the server stops its own collections: {type(exc).__name__}: {exc}", file=sys.stderr)
                return
            await anyio.sleep(CHECK_EVERY_S)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with anyio.create_task_group() as tasks:
                if keeper.step_bytes > 0:
                    tasks.start_soon(keep_heap)
                try:
                    yield
                finally:
                    tasks.cancel_scope.cancel()
        finally:
            await anyio.to_thread.run_sync(registry.close)

    routes = [Route("/", root, methods=["GET", "HEAD"]), Route("/ovgenai_c/info", info, methods=["GET"])] + \
        OpenAIRoutes(state).routes() + ResponsesRoutes(state).routes() + AudioRoutes(state).routes() + \
        OllamaRoutes(state).routes()
    app = Starlette(routes=routes, middleware=[Middleware(BearerAuth, api_key=config.api_key)], lifespan=lifespan)
    app.state.server = state
    app.state.heap_keeper = keeper
    return app
