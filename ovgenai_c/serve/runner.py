"""Run the server with uvicorn (blocking): bind the port first, then preload the default model, then serve."""
from __future__ import annotations

import socket
import sys
from typing import Any, Optional

from .app import create_app
from .config import ServeConfig
from .registry import ProviderFactory


class BindError(OSError):
    """The server cannot listen on its host and port (in use, not an address of this machine...)."""


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (as uvicorn binds it: SO_REUSEADDR, IPv6 for an address with ':')."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
        raise BindError(exc.errno, f"cannot listen on {where}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def run(config: ServeConfig, provider_factory: Optional[ProviderFactory] = None, library: Any = None,
        preload: bool = True, log_level: str = "info") -> None:
    """Serve until stopped. The port is bound before the default model loads, so that a port in use is reported
    at once (:class:`BindError`), not after a long load."""
    import uvicorn

    sock = bind(config.host, config.port)
    try:
        app = create_app(config, provider_factory, library)
        registry = app.state.server.registry
        if preload and registry.default_path is not None:
            registry.preload_default()  # before the first request pays for it, and errors show now
            print(f"serving {registry.default_name} ({registry.default_path}) as the default model", file=sys.stderr)
        server = uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port, log_level=log_level,
                                               timeout_graceful_shutdown=10))
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            pass
    finally:
        sock.close()
    if not server.started:
        raise SystemExit(3)  # uvicorn's STARTUP_FAILURE (it has said why)
