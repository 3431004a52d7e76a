"""``ovgenai-c serve``: OpenAI- and Ollama-compatible HTTP APIs over the provider facade.

Needs the ``serve`` extra (Starlette + uvicorn): ``pip install 'ovgenai_c[serve]'``. Importing this package
loads neither; :func:`create_app` and :func:`run` do.

One pipeline answers one request at a time (the GenAI C ABI); each model has ``parallel`` pipelines (each its own
provider session) and a bounded queue in front of them (full → HTTP 429).
"""
from __future__ import annotations

import importlib.util
from typing import Any

from .config import ServeConfig

EXTRA_HINT = "pip install 'ovgenai_c[serve]'"


def missing_extra() -> "str | None":
    """The first missing module of the ``serve`` extra, or None when it is installed."""
    for mod in ("starlette", "uvicorn", "anyio"):
        if importlib.util.find_spec(mod) is None:
            return mod
    return None


def create_app(config: ServeConfig, **kwargs: Any) -> Any:
    """The ASGI application (see :func:`ovgenai_c.serve.app.create_app`)."""
    from .app import create_app as _create

    return _create(config, **kwargs)


__all__ = ["ServeConfig", "create_app", "missing_extra", "EXTRA_HINT"]
