"""Serve an env's own ASGI app as it is (a plain FastAPI app of an OpenEnv env folder), under uvicorn.

An OpenEnv env folder may name an app that OpenEnv's ``create_app`` did not make (``runtime: fastapi``, with routes
of its own: ``/reset``, ``/step``, ``/state``, ``/health``, ``/ws``, ``/mcp`` and any others). Such an app is not
wrapped in an Environment: :class:`AsgiServer` runs it on the loopback port (or Unix socket) asked for, with
uvicorn, so every route answers exactly as under OpenEnv's own tooling, and our clients drive it over its ``/ws``.

Of :class:`~openenv_train.server.ServerConfig`, ``host``, ``port``, ``uds``, ``token`` (checked in front of the app,
``/health`` stays open), ``max_message_size`` (uvicorn's ``ws_max_size``) and ``shutdown_grace_s`` apply; session
caps, idle timeouts, rate limits and the playground are the app's own business (a warning names any that is set).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import inspect
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..core import TOKEN_ENV, ServerStartError, bearer_of, token_matches, unauthorized_message, warn_if_exposed
from ._run import _event_loop_policy, _watch_parent
from ._server import ServerConfig

__all__ = ["AsgiApp", "AsgiServer", "is_asgi_app", "run_asgi_server"]

log = logging.getLogger("openenv_train.server")

INSTALL = "pip install 'openenv-train[asgi]' (uvicorn: an OpenEnv env folder's FastAPI app runs under it, as in OpenEnv)"
_NOT_APPLIED = ("max_sessions", "idle_timeout_s", "max_messages_per_s", "message_burst", "web", "reuse_port")


@dataclass(frozen=True)
class AsgiApp:
    """An env served by its own ASGI app rather than by an Environment class of ours.

    Args:
        app: the ASGI callable (``await app(scope, receive, send)``), e.g. a FastAPI app.
        name: the env's name (its ``openenv.yaml`` name), for logs.
        source: where it came from (the env folder), for messages.
    """

    app: Any
    name: str
    source: str = ""


def is_asgi_app(value: Any) -> bool:
    """Whether ``value`` is an ASGI 3 application: an ``async`` callable of ``(scope, receive, send)``.

    Example:
        >>> async def app(scope, receive, send): ...
        >>> is_asgi_app(app), is_asgi_app(print), is_asgi_app(int)
        (True, False, False)
    """
    if isinstance(value, type) or not callable(value):
        return False
    call = value if inspect.isfunction(value) or inspect.ismethod(value) else getattr(value, "__call__", None)  # noqa: B004
    if not inspect.iscoroutinefunction(call):
        return False
    try:
        params = [p for p in inspect.signature(call).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return len(params) == 3


def app_routes(app: Any, *, most: int = 16) -> str:
    """The routes ``app`` defines, as one phrase for a log line: read from its router (Starlette's and FastAPI's
    ``app.routes``: each route's path, a WebSocket route marked, a mount with its prefix); an app that exposes no
    router says so.

    Example:
        >>> class Route:
        ...     def __init__(self, path): self.path = path
        >>> class App:
        ...     routes = [Route("/reset"), Route("/step"), Route("/reset")]
        ...     async def __call__(self, scope, receive, send): ...
        >>> app_routes(App())
        'its routes: /reset, /step'
        >>> async def bare(scope, receive, send): ...
        >>> app_routes(bare)
        'its routes are unknown: the app exposes no router'
    """
    routes = getattr(app, "routes", None)
    if routes is None:
        routes = getattr(getattr(app, "router", None), "routes", None)
    try:
        listed = list(routes) if routes is not None else None
    except TypeError:
        listed = None
    if listed is None:
        return "its routes are unknown: the app exposes no router"
    paths: list[str] = []
    for route in listed:
        path = getattr(route, "path", None)
        if not isinstance(path, str):
            continue
        kind = type(route).__name__
        if "WebSocket" in kind:
            path += " (WebSocket)"
        elif kind == "Mount":
            path = (path or "/") + " (mount)"
        if path not in paths:
            paths.append(path)
    if not paths:
        return "it defines no routes"
    shown = ", ".join(paths[:most])
    return f"its routes: {shown}" + (f", ... ({len(paths)} in all)" if len(paths) > most else "")


class _TokenGate:
    """ASGI middleware: every route but ``/health`` requires the server's token (as :class:`EnvServer` does)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") == "/health":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        given = bearer_of(headers.get(b"authorization"))
        if token_matches(given, self.token):
            await self.app(scope, receive, send)
            return
        message = unauthorized_message(given, env_var=TOKEN_ENV)
        if scope["type"] == "websocket":  # refused before the handshake: uvicorn answers 403
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            return
        body = json.dumps({"detail": message}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": body})


def _import_uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError as exc:
        raise ServerStartError(f"serving an env's own ASGI app needs uvicorn: {INSTALL}") from exc
    return uvicorn


def _bind(config: ServerConfig) -> socket.socket:
    """The listening socket (bound here, so that port 0 is known at once and errors say what to do)."""
    where = config.uds or f"{config.host}:{config.port}"
    try:
        if config.uds:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(config.uds)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(config.uds)
        else:
            family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((config.host.strip("[]"), config.port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ServerStartError(f"{where} is already in use; stop the other process or pick another port "
                                   "(--port 0 picks a free one)") from None
        raise ServerStartError(f"cannot listen on {where}: {exc.strerror or exc}") from None
    return sock


class AsgiServer:
    """Runs an :class:`AsgiApp` under uvicorn on ``config``'s host and port (or Unix socket).

    Args:
        target: the app to serve.
        config: where to listen and the options that apply (see the module docstring).
        startup_timeout_s: limit on the app's startup (its lifespan handlers).
    """

    def __init__(self, target: AsgiApp, config: ServerConfig | None = None, *, startup_timeout_s: float = 60.0) -> None:
        self.target = target
        self.config = config or ServerConfig()
        self.startup_timeout_s = startup_timeout_s
        self.port: int | None = None
        self._uvicorn: Any = None
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of a started TCP server (``unix://PATH`` behind a Unix socket)."""
        if self.config.uds:
            return f"unix://{self.config.uds}"
        host = f"[{self.config.host}]" if ":" in self.config.host else self.config.host
        return f"http://{host}:{self.port}"

    def _options_not_applied(self) -> list[str]:
        defaults = {f.name: f.default for f in dataclasses.fields(ServerConfig)}
        return [name for name in _NOT_APPLIED if getattr(self.config, name) != defaults[name]]

    async def start(self) -> None:
        """Bind, start uvicorn and wait until the app's startup is done.

        Raises:
            ServerStartError: uvicorn is missing, the address cannot be bound, or the app's startup failed.
        """
        uvicorn = _import_uvicorn()
        config = self.config
        ignored = self._options_not_applied()
        if ignored:
            log.warning("%s serves its own routes: %s do not apply to it (its app decides)", self.target.name,
                        ", ".join(ignored))
        app = _TokenGate(self.target.app, config.token) if config.token else self.target.app
        sock = _bind(config)
        if not config.uds:
            self.port = sock.getsockname()[1]
            warn_if_exposed(log, "the env server", config.host, self.port, authenticated=config.token is not None,
                            option=f"--token-file or ${TOKEN_ENV}")
        server = self._uvicorn = _server_class(uvicorn)(uvicorn.Config(
            app, log_config=None, log_level="warning", access_log=False, lifespan="auto",
            ws_max_size=config.max_message_size, timeout_graceful_shutdown=config.shutdown_grace_s))
        task = self._task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
        ready = asyncio.ensure_future(server.ready.wait())
        try:
            await asyncio.wait([task, ready], timeout=self.startup_timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if not server.ready.is_set() or server.should_exit:
            reason = ("its startup did not finish within " f"{self.startup_timeout_s:g}s" if not task.done()
                      else "its startup failed (the app's log above says why)")
            await self.stop()
            sock.close()
            raise ServerStartError(f"the app of {self.target.source or self.target.name} did not start: {reason}")

    async def stop(self) -> None:
        """Stop accepting, let requests in flight finish (up to ``shutdown_grace_s``); idempotent."""
        task, self._task = self._task, None
        if task is None or self._uvicorn is None:
            return
        self._uvicorn.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(task), self.config.shutdown_grace_s + 5.0)
        except TimeoutError:
            self._uvicorn.force_exit = True
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        except Exception as exc:  # the server task failed: already stopped
            log.debug("uvicorn ended with %s: %s", type(exc).__name__, exc)
        if self.config.uds:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.config.uds)

    async def __aenter__(self) -> AsgiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def _server_class(uvicorn: Any) -> Any:
    """uvicorn's Server that signals when its startup is done, leaves signal handling to its owner and does not exit
    the process when the app's startup fails."""

    class _Server(uvicorn.Server):  # type: ignore[misc, name-defined]
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.ready = asyncio.Event()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # signals are ours: run_asgi_server handles SIGTERM/SIGINT, an in-process server has none

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            try:
                await super().startup(sockets=sockets)
            except SystemExit:  # uvicorn exits the process when the app's startup fails: here, a start error
                self.should_exit = True
                return
            self.ready.set()

    return _Server


async def _serve(target: AsgiApp, config: ServerConfig, parent_pid: int | None, ready_file: str | None) -> None:
    server = AsgiServer(target, config)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watcher = loop.create_task(_watch_parent(parent_pid, stop)) if parent_pid else None
    assert server._task is not None
    ended = server._task
    print(f"openenv-train: serving {target.name}'s own app ({target.source or 'ASGI'}) on {server.url} as it is "
          f"({app_routes(target.app)})", file=sys.stderr, flush=True)
    if ready_file:
        tmp = f"{ready_file}.tmp"
        with open(tmp, "w") as f:
            f.write(server.url)
        os.replace(tmp, ready_file)
    try:
        await asyncio.wait([loop.create_task(stop.wait()), ended], return_when=asyncio.FIRST_COMPLETED)
    finally:
        if watcher is not None:
            watcher.cancel()
        await server.stop()


def run_asgi_server(target: AsgiApp, config: ServerConfig, *, parent_pid: int | None = None,
                    ready_file: str | None = None) -> None:
    """Serve ``target`` until SIGTERM/SIGINT (or until ``parent_pid`` is gone), then shut down gracefully.

    ``ready_file`` receives the server's URL once it listens (as :func:`run_server` does).

    Raises:
        ServerStartError: uvicorn is missing, the address cannot be bound, or the app's startup failed.
    """
    _event_loop_policy()
    asyncio.run(_serve(target, config, parent_pid, ready_file))
