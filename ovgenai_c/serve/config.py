"""The server's settings and limits (plain data; no third-party import)."""
from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Union

API_KEY_ENV = "OVGENAI_C_API_KEY"
DEFAULT_PORT = 8000


@dataclass
class ServeConfig:
    """``models_root``: the catalog root (None: the provider's default root). ``default_model``: the path served
    when a request names no model. ``parallel``: pipelines per model (each serves one request at a time) when
    the model is not batched. ``batching``: on the bundled backend, a model's concurrent requests share one
    continuous-batching pipeline (``batch_size`` of them at once) instead of ``parallel`` pipelines; the official
    library always uses the pipelines.
    ``max_queue``: requests waiting per model beyond those running (more → 429). ``request_timeout``: seconds
    per request, queueing included (→ 504, the generation is cancelled natively). ``max_body_bytes``: request
    body cap (→ 413). ``max_loaded_models``: models kept loaded at once (least recently used idle one unloaded).
    ``api_key``: required as ``Authorization: Bearer <key>`` when set.
    ``remote_models``: model name → remote spec (``openai+http://HOST:PORT/v1#MODEL``, as ``open_provider`` takes
    it): models answered by another OpenAI-compatible endpoint through the remote provider (``default_model`` may
    be such a spec too). ``remote_api_key``: the key sent to them (default: ``$OPENAI_API_KEY``)."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    models_root: Optional[Path] = None
    default_model: Optional[Union[Path, str]] = None
    parallel: int = 1
    batching: bool = True
    batch_size: int = 8
    max_queue: int = 8
    request_timeout: Optional[float] = 600.0
    max_body_bytes: int = 1 << 20
    max_loaded_models: int = 2
    api_key: Optional[str] = None
    allow_unauthenticated: bool = False
    remote_models: Dict[str, str] = field(default_factory=dict)
    remote_api_key: Optional[str] = None

    def check(self) -> None:
        """Raise ValueError naming the first bad setting."""
        if not 0 <= self.port <= 65535:
            raise ValueError(f"--port must be in 0..65535, got {self.port}")
        if self.parallel < 1:
            raise ValueError(f"--parallel must be >= 1, got {self.parallel}")
        if self.batch_size < 1:
            raise ValueError(f"--batch-size must be >= 1, got {self.batch_size}")
        if self.max_queue < 0:
            raise ValueError(f"--max-queue must be >= 0, got {self.max_queue}")
        if self.request_timeout is not None and not self.request_timeout > 0:
            raise ValueError(f"--request-timeout must be > 0 seconds, got {self.request_timeout}")
        if self.max_body_bytes < 1024:
            raise ValueError(f"--max-body-bytes must be >= 1024, got {self.max_body_bytes}")
        if self.max_loaded_models < 1:
            raise ValueError(f"--max-loaded-models must be >= 1, got {self.max_loaded_models}")
        from ..provider.remote import is_remote_spec  # standard library only

        for name, spec in self.remote_models.items():
            if not isinstance(name, str) or not name.strip() or name != name.strip():
                raise ValueError(f"a remote model needs a name without surrounding spaces, got {name!r}")
            if not is_remote_spec(spec):
                raise ValueError(f"remote model {name!r}: a remote spec looks like "
                                 f"'openai+http://HOST:PORT/v1#MODEL', got {spec!r}")
        if isinstance(self.default_model, str) and not is_remote_spec(self.default_model):
            self.default_model = Path(self.default_model)
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("the API key must not be empty")
        if not is_loopback(self.host) and not self.api_key and not self.allow_unauthenticated:
            raise ValueError(
                f"refusing to listen on {self.host!r} (not a loopback address) without an API key: anyone who can "
                f"reach it could use the models. Pass --api-key KEY (or set {API_KEY_ENV}), or "
                "--allow-unauthenticated if that is what you want")


def is_loopback(host: str) -> bool:
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def api_key_from_env() -> Optional[str]:
    value = os.environ.get(API_KEY_ENV, "")
    return value if value.strip() else None
