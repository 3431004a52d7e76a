"""``ovgenai-c serve`` as a Ray Serve deployment: N replicas of the same ASGI app behind Ray's HTTP proxy, each
replica owning its own pipelines (its own registry, pool and limits, as one ``ovgenai-c serve`` process has).

Needs the ``ray`` extra (``pip install 'ovgenai_c[ray]'``: Ray Serve) besides ``serve``. From Python::

    from ovgenai_c.serve import ServeConfig
    from ovgenai_c.serve.ray_app import run_replicas
    handle = run_replicas(ServeConfig(default_model=path), replicas=2, port=8000)   # returns once all are up
    ...                                                                               # OpenAI /v1, Ollama /api
    handle.shutdown()

or ``ovgenai-c serve MODEL --ray-replicas 2`` (connects to the cluster named by ``RAY_ADDRESS``, else starts a
local Ray instance). Every answer carries ``x-ovgenai-c-replica``: which replica served it. Importing this module
imports neither Ray nor Starlette; the functions do.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

from .config import ServeConfig

EXTRA_HINT = "pip install 'ovgenai_c[serve,ray]'"
REPLICA_HEADER = "x-ovgenai-c-replica"
APP_NAME = "ovgenai_c"


def missing_extra() -> "str | None":
    """The first missing module of the ``ray`` extra (Ray Serve), or None when it is installed."""
    import importlib.util

    for mod in ("ray", "ray.serve"):
        try:
            if importlib.util.find_spec(mod) is None:
                return mod
        except ModuleNotFoundError:
            return mod
    return None


@dataclass
class ReplicaSpec:
    """What each replica builds its server from (plain data: sent to the replicas by Ray). ``library``: the GenAI
    C library path (None: discovery). ``device``: as ``--device``. ``properties``: passed to every pipeline.
    ``warm_start``: add the command line's compiled-model cache properties (what ``ovgenai-c serve`` does unless
    ``--no-cache``)."""

    config: Dict[str, Any]
    library: Optional[str] = None
    device: Optional[str] = None
    properties: Dict[str, Any] = field(default_factory=dict)
    warm_start: bool = False

    @classmethod
    def of(cls, config: ServeConfig, library: Optional[str] = None, device: Optional[str] = None,
           properties: Optional[Dict[str, Any]] = None, warm_start: bool = False) -> "ReplicaSpec":
        config.check()
        return cls({k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()}, library, device,
                   dict(properties or {}), warm_start)

    def serve_config(self) -> ServeConfig:
        c = dict(self.config)
        for k in ("models_root", "default_model"):
            if c.get(k) is not None:
                c[k] = Path(c[k])
        return ServeConfig(**c)


class ReplicaHeader:
    """ASGI middleware: every HTTP answer carries ``x-ovgenai-c-replica: <id>``."""

    def __init__(self, app: Any, replica_id: str) -> None:
        self.app = app
        self.value = replica_id.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def tagged(message: Dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = dict(message, headers=list(message.get("headers", [])) +
                               [(REPLICA_HEADER.encode(), self.value)])
            await send(message)

        await self.app(scope, receive, tagged)


def build_replica_app(spec: ReplicaSpec, replica_id: str) -> Any:
    """The ASGI app of one replica: :func:`ovgenai_c.serve.create_app` over its own providers, the default model
    loaded before the replica reports ready."""
    from .. import load_library
    from ..provider import Provider, SessionPool, profile_for, resolve_device
    from .app import create_app

    lib = load_library(spec.library) if spec.library else load_library()

    def factory(path: Path, index: int) -> Provider:
        profile = profile_for(path)
        props = dict(spec.properties)
        if spec.warm_start:
            from ..cli import warm_start_properties

            props.update(warm_start_properties(profile.properties))
        return Provider(path, device=resolve_device(spec.device, profile), library=lib, properties=props,
                        profile=profile, pool=SessionPool(ttl=None, max_resident=1))

    app = create_app(spec.serve_config(), factory, lib)
    app.state.server.registry.preload_default()
    return ReplicaHeader(app, replica_id)


def deployment(replicas: int, num_cpus: float = 1.0) -> Any:
    """The Ray Serve deployment (class) of the server, ``replicas`` copies, each reserving ``num_cpus``."""
    from ray import serve

    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")

    @serve.ingress()
    class OvgenaiServe:
        """One replica: its own registry, pipelines and limits."""

        def __init__(self, spec: ReplicaSpec) -> None:
            ctx = serve.get_replica_context()
            self._ovgenai_replica = str(getattr(ctx.replica_id, "unique_id", ctx.replica_id))
            self._ovgenai_app = build_replica_app(spec, self._ovgenai_replica)

        def __serve_build_asgi_app__(self) -> Any:
            return self._ovgenai_app

    # a replica being stopped gets 5 s to finish what it runs (Ray's default, 20 s per replica, made Ctrl-C of
    # `serve --ray-replicas` outlast the CLI test's bound on a loaded machine); a dropped client cancels anyway
    return serve.deployment(OvgenaiServe, name="OvgenaiServe", num_replicas=replicas,
                            ray_actor_options={"num_cpus": num_cpus}, max_ongoing_requests=64,
                            graceful_shutdown_timeout_s=5, graceful_shutdown_wait_loop_s=0.5)


class RayServer:
    """A running Ray Serve application of the server (see :func:`run_replicas`)."""

    def __init__(self, url: str, started_ray: bool) -> None:
        self.url = url
        self.started_ray = started_ray

    def shutdown(self) -> None:
        """Stop the application and Ray Serve; stop Ray too when :func:`run_replicas` started it."""
        import ray
        from ray import serve

        serve.shutdown()
        if self.started_ray:
            ray.shutdown()


def run_replicas(config: ServeConfig, replicas: int, host: str = "127.0.0.1", port: int = 8000,
                 library: Optional[str] = None, device: Optional[str] = None,
                 properties: Optional[Dict[str, Any]] = None, num_cpus: float = 1.0,
                 ray_init: Optional[Dict[str, Any]] = None, warm_start: bool = False) -> RayServer:
    """Deploy ``replicas`` copies of the server on Ray Serve, its HTTP proxy on ``host:port``; returns once every
    replica has loaded its default model. Joins the running Ray cluster (``RAY_ADDRESS`` or an initialised
    ``ray``), else starts a local instance with ``ray_init`` (e.g. ``{"num_cpus": 2}``). Replicas import this
    same ovgenai_c (its folder is put first on their PYTHONPATH; on other nodes it must be installed there, and
    the models must be at the same paths)."""
    import ray
    from ray import serve

    spec = ReplicaSpec.of(config, library, device, properties, warm_start)
    started = False
    if not ray.is_initialized():
        here = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
        kw: Dict[str, Any] = {"runtime_env": {"env_vars": {"PYTHONPATH": path}}}
        if not os.environ.get("RAY_ADDRESS"):
            kw.update(include_dashboard=False)
        kw.update(ray_init or {})
        ray.init(**kw)
        started = True
    server = RayServer(f"http://{host}:{port}", started)
    try:
        serve.start(http_options={"host": host, "port": port})
        serve.run(deployment(replicas, num_cpus).bind(spec), name=APP_NAME, route_prefix="/")
    except BaseException:
        server.shutdown()
        raise
    return server
