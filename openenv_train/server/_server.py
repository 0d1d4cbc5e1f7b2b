"""The env server: HTTP/1.1 and WebSocket on one port (or Unix socket), with session cap, idle reaping
and graceful shutdown. Connections are handled by :class:`~openenv_train.server._connection.Connection`."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..core import (
    TOKEN_ENV,
    ErrorCode,
    ProtocolError,
    ServerMode,
    ServerStartError,
    option,
    resolve_token,
    warn_if_exposed,
)
from ..http import TaskSet
from ._connection import Connection
from ._environment import Environment
from ._mcp_rpc import McpRpc
from ._routes import HttpRoutes
from ._session import SessionRegistry

__all__ = ["EnvServer", "ServerConfig"]

log = logging.getLogger("openenv_train.server")


@dataclass
class ServerConfig:
    """Options of an :class:`EnvServer`; each field's help once, in its metadata (``openenv-train serve``'s
    options are generated from it)."""

    host: str = field(default="127.0.0.1", metadata=option(
        "Interface to bind; loopback unless you mean to expose it."))
    port: int = field(default=8000, metadata=option(
        "TCP port; 0 picks a free one (read it back from EnvServer.port)."))
    uds: str | None = field(default=None, metadata=option("Listen on this Unix socket path instead of TCP."))
    reuse_port: bool = field(default=False, metadata=option(
        "Bind with SO_REUSEPORT: several server processes share the port (serve --workers N).", hidden=True))
    max_sessions: int | None = field(default=1024, metadata=option(
        "Most concurrent sessions (WebSocket and HTTP-MCP); None for no cap.", envvar="MAX_CONCURRENT_ENVS"))
    idle_timeout_s: float | None = field(default=600.0, metadata=option(
        "Close sessions with no request for this many seconds; None (0 on the command line) never does.",
        flag="--idle-timeout", none_as=0.0))
    max_message_size: int = field(default=16 * 2**20, metadata=option(
        "Largest WebSocket message (bytes) accepted; larger ones end the session with a clear error."))
    max_http_body: int = field(default=16 * 2**20, metadata=option(
        "Largest HTTP request body accepted, in bytes.", cli=False))
    blocking_workers: int = field(default=32, metadata=option(
        "Threads for envs that declare blocking = True.", cli=False))
    shutdown_grace_s: float = field(default=5.0, metadata=option(
        "How long a shutdown waits for requests in flight.", cli=False))
    web: bool = field(default=False, metadata=option(
        "Also serve a playground page at /web (action form, reset/step, history)."))
    mode: str = field(default=ServerMode.SIMULATION.value, metadata=option(
        "OpenEnv's server mode: 'simulation' serves the stateless HTTP /reset, /step and /state too; 'production' "
        "leaves them out (sessions on /ws and /mcp, /health, /schema, /metadata stay).", envvar="OPENENV_MODE"))
    token: str | None = field(default=None, repr=False, metadata=option(
        "Shared secret every route but /health requires (Authorization: Bearer <token>). None reads token_file, "
        "else $OPENENV_TRAIN_TOKEN; \"\" turns authentication off even when that is set.", cli=False))
    token_file: str | None = field(default=None, metadata=option(
        "Require 'Authorization: Bearer <token>' (all routes but /health) with the token in this file (its first "
        "line); without it, $OPENENV_TRAIN_TOKEN is used when set."))
    max_messages_per_s: float | None = field(default=None, metadata=option(
        "Per-session cap on WebSocket messages per second (token bucket); off by default."))
    message_burst: int | None = field(default=None, metadata=option(
        "Messages a session may send at once under the rate cap (default: max(1, max_messages_per_s))."))

    def __post_init__(self) -> None:
        self.token = resolve_token(self.token, self.token_file, TOKEN_ENV)
        self.mode = ServerMode.parse(self.mode).value
        self.token_file = None  # resolved: a copy of this config carries the token itself
        if self.max_messages_per_s is not None and self.max_messages_per_s <= 0:
            raise ValueError(f"max_messages_per_s must be > 0 or None, got {self.max_messages_per_s}")
        if self.message_burst is not None and self.message_burst < 1:
            raise ValueError(f"message_burst must be >= 1 or None, got {self.message_burst}")
        if self.max_sessions is not None and self.max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1 or None, got {self.max_sessions}")
        if self.max_message_size < 1024:
            raise ValueError(f"max_message_size must be at least 1024 bytes, got {self.max_message_size}")
        if self.idle_timeout_s is not None and self.idle_timeout_s <= 0:
            raise ValueError(f"idle_timeout_s must be > 0 or None, got {self.idle_timeout_s}")


class EnvServer:
    """Serves one Environment class over ``/ws`` and the HTTP routes of the protocol.

    Example:
        >>> import asyncio
        >>> from openenv_train.envs.echo import EchoEnvironment
        >>> async def main():
        ...     async with EnvServer(EchoEnvironment, ServerConfig(port=0)) as server:
        ...         return server.url.startswith("http://127.0.0.1:")
        >>> asyncio.run(main())
        True
    """

    def __init__(self, env: type[Environment[Any, Any, Any]], config: ServerConfig | None = None, *,
                 factory: Callable[[], Environment[Any, Any, Any]] | None = None) -> None:
        self.env_cls = env
        self.config = config or ServerConfig()
        self.executor = ThreadPoolExecutor(self.config.blocking_workers, thread_name_prefix="env") if env.blocking else None
        factory_name = f"{env.__module__}:{env.__qualname__}"
        self.limit_hits: dict[str, int] = {}
        """How often each limit was hit: ``max_sessions``, ``max_message_size``, ``max_messages_per_s``,
        ``max_http_body`` and ``token`` (requests refused for a missing or wrong token)."""
        self.registry = SessionRegistry(
            factory or env, env.spec_info(), max_sessions=self.config.max_sessions,
            executor=self.executor, factory_name=factory_name, limit_hits=self.limit_hits,
        )
        self.mcp = McpRpc(self.registry)
        from .. import __version__

        self.routes = HttpRoutes(self.registry, self.mcp, version=__version__, mode=ServerMode(self.config.mode))
        if self.config.web:
            from ._web import WebRoutes

            self.routes.web = WebRoutes(env)
        self.connections: set[Connection] = set()
        self.tasks = TaskSet()
        self._server: asyncio.base_events.Server | None = None
        self._reaper: asyncio.Task[None] | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of a started TCP server."""
        if self.config.uds:
            return f"unix://{self.config.uds}"
        return f"http://{self.config.host}:{self.port}"

    def count_limit(self, name: str) -> None:
        """Count one hit of the limit ``name`` in :attr:`limit_hits`."""
        self.limit_hits[name] = self.limit_hits.get(name, 0) + 1

    def spawn(self, coro: Any) -> None:
        """Run a coroutine in the background, keeping a reference until it ends."""
        self.tasks.spawn(coro)

    async def start(self) -> None:
        """Bind and start accepting connections.

        Raises:
            ServerStartError: the port is in use or the address cannot be bound.
        """
        loop = asyncio.get_running_loop()
        config = self.config
        try:
            if config.uds:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(config.uds)
                self._server = await loop.create_unix_server(lambda: Connection(self), config.uds, backlog=4096)
            else:
                self._server = await loop.create_server(
                    lambda: Connection(self), config.host, config.port, backlog=4096, reuse_address=True,
                    reuse_port=config.reuse_port or None,
                )
                self.port = self._server.sockets[0].getsockname()[1]
        except OSError as exc:
            where = config.uds or f"{config.host}:{config.port}"
            if exc.errno == errno.EADDRINUSE:
                raise ServerStartError(
                    f"{where} is already in use; stop the other process or pick another port (--port 0 picks a free one)"
                ) from None
            raise ServerStartError(f"cannot listen on {where}: {exc.strerror or exc}") from None
        if not config.uds:
            warn_if_exposed(log, "the env server", config.host, self.port, authenticated=config.token is not None,
                            option=f"--token-file or ${TOKEN_ENV}")
        if config.idle_timeout_s is not None:
            self._reaper = loop.create_task(self._reap(config.idle_timeout_s))

    async def _reap(self, idle_timeout_s: float) -> None:
        interval = max(0.05, min(idle_timeout_s / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            idle = {s.id: s for s in self.registry.idle(idle_timeout_s)}
            if not idle:
                continue
            for conn in list(self.connections):
                if conn.session is not None and conn.session.id in idle:
                    conn._ws_fail(ProtocolError(
                        ErrorCode.SESSION_ERROR,
                        f"session idle for more than {idle_timeout_s:g}s was closed by the server; "
                        "reconnect to start a new session (serve with a larger --idle-timeout to keep sessions longer)",
                    ), 1001)
            for session in idle.values():
                self.registry.reaped += 1
                await self.registry.close(session)

    async def stop(self) -> None:
        """Stop accepting, let requests in flight finish (up to the grace period), close every env."""
        if self._server is None:
            return
        self._server.close()
        if self._reaper is not None:
            self._reaper.cancel()
        await self.tasks.drain(self.config.shutdown_grace_s)
        for conn in list(self.connections):
            conn.shut(1001, "server shutting down")
        for session in list(self.registry.sessions.values()):
            if session is not None:
                await self.registry.close(session)
        await self.tasks.drain(self.config.shutdown_grace_s)
        # Give clients a moment to answer the close frames, then drop whoever has not.
        deadline = asyncio.get_running_loop().time() + 1.0
        while self.connections and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.abort()
        self._server = None
        if self.config.uds:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.config.uds)
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)

    async def __aenter__(self) -> EnvServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
