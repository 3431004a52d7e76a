"""Run the server with uvicorn (blocking), after preloading the default model."""
from __future__ import annotations

import sys
from typing import Any, Optional

from .app import create_app
from .config import ServeConfig
from .registry import ProviderFactory


def run(config: ServeConfig, provider_factory: Optional[ProviderFactory] = None, library: Any = None,
        preload: bool = True, log_level: str = "info") -> None:
    import uvicorn

    app = create_app(config, provider_factory, library)
    registry = app.state.server.registry
    if preload and registry.default_path is not None:
        registry.preload_default()  # before the first request pays for it, and errors show now
        print(f"serving {registry.default_name} ({registry.default_path}) as the default model", file=sys.stderr)
    uvicorn.run(app, host=config.host, port=config.port, log_level=log_level, timeout_graceful_shutdown=10)
