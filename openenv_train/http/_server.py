"""A small HTTP/1.1 JSON server: :class:`~openenv_train.http.HttpConnection` per client, one handler task per request.

Connections are kept alive; each answers its requests in order while many connections run concurrently
(which is what lets the policy endpoint batch them).
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..core import ServerStartError
from ._connection import HttpConnection, HttpLimits, HttpRequest, HttpResponse, HttpStream
from ._tasks import TaskSet

__all__ = ["Handler", "HttpRequest", "HttpResponse", "HttpServer"]

log = logging.getLogger("openenv_train.http")


Handler = Callable[[HttpRequest], Awaitable[HttpResponse | HttpStream]]


class _Connection(HttpConnection):
    """One client connection: each complete request goes to the server's handler."""

    __slots__ = ("server",)

    def __init__(self, server: HttpServer) -> None:
        super().__init__(server.tasks, server.error_response)
        self.server = server

    def limits(self) -> HttpLimits:
        server = self.server
        return HttpLimits(server.max_body, server.request_timeout_s, server.keepalive_timeout_s)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.server.connections.add(self)
        super().connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        super().connection_lost(exc)

    def on_request(self, request: HttpRequest) -> Awaitable[HttpResponse | HttpStream]:
        return self.server.handler(request)

    def on_answer_failed(self, exc: Exception) -> HttpResponse:
        log.exception("%s: handler failed", self.server.name)
        return self.server.error_response(500, f"internal error: {type(exc).__name__}: {exc}")


class HttpServer:
    """Serves ``handler`` on ``host:port`` (port 0 picks a free one; read it back from ``port``).

    Args:
        handler: Coroutine that answers one request (a whole response, or a stream sent as it is produced).
        error_response: Builds the body of errors found before the handler runs (bad HTTP, body too large).
        host: Interface to bind.
        port: TCP port.
        max_body: Largest request body accepted, in bytes.
        request_timeout_s: A started request (headers and body) must arrive within this, else 408 and close.
        keepalive_timeout_s: An idle connection is closed after this.
        name: What the server is, for its log lines (``"policy endpoint"``).
    """

    def __init__(self, handler: Handler, error_response: Callable[[int, str], HttpResponse], *,
                 host: str = "127.0.0.1", port: int = 0, max_body: int = 32 * 2**20, request_timeout_s: float = 30.0,
                 keepalive_timeout_s: float = 300.0, name: str = "HTTP server") -> None:
        self.name = name
        self.request_timeout_s, self.keepalive_timeout_s = request_timeout_s, keepalive_timeout_s
        self.handler = handler
        self.error_response = error_response
        self.host = host
        self.port = port
        self.max_body = max_body
        self.connections: set[_Connection] = set()
        self.tasks = TaskSet()
        self._server: asyncio.Server | None = None

    def spawn(self, coro: Any) -> None:
        """Run a coroutine in the background, keeping a reference until it ends."""
        self.tasks.spawn(coro)

    async def start(self) -> None:
        """Bind and accept connections.

        Raises:
            ServerStartError: the address is in use or cannot be bound.
        """
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(lambda: _Connection(self), self.host, self.port, backlog=1024,
                                                    reuse_address=True)
        except OSError as exc:
            hint = "; stop the other process or pick another port (0 picks a free one)" if exc.errno == errno.EADDRINUSE else ""
            raise ServerStartError(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}{hint}") from None
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let requests in flight finish (up to ``grace_s``), then drop the connections."""
        if self._server is None:
            return
        self._server.close()
        await self.tasks.drain(grace_s)
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()
        self._server = None
