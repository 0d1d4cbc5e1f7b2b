"""A small HTTP/1.1 JSON server: h11 on an ``asyncio.Protocol``, one handler task per request.

Connections are kept alive; each answers its requests in order while many connections run concurrently
(which is what lets the policy endpoint batch them).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import h11

from ..core import ServerStartError
from ._tasks import TaskSet

__all__ = ["Handler", "HttpRequest", "HttpResponse", "HttpServer"]

log = logging.getLogger("openenv_train.policy")


@dataclass
class HttpRequest:
    """One request: method, path (no query), lower-cased headers and the body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class HttpResponse:
    """One response: status, body bytes and extra headers."""

    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = "application/json"


Handler = Callable[[HttpRequest], Awaitable[HttpResponse]]


class _Connection(asyncio.Protocol):
    """One client connection: parse requests with h11, run the handler, write the answer."""

    def __init__(self, server: HttpServer) -> None:
        self.server = server
        self.http = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        self.transport: asyncio.Transport | None = None
        self.request: tuple[str, str, dict[str, str], bytearray] | None = None
        self.head = False
        self.busy = False
        self.timer: asyncio.TimerHandle | None = None
        self.idle = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections.add(self)
        self._arm(idle=True)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.transport = None
        self._disarm()

    def _arm(self, *, idle: bool) -> None:
        """Close the connection unless a request completes in time: an idle keep-alive connection within
        ``keepalive_timeout_s``, a started request within ``request_timeout_s`` (no slowloris)."""
        self._disarm()
        self.idle = idle
        seconds = self.server.keepalive_timeout_s if idle else self.server.request_timeout_s
        self.timer = asyncio.get_running_loop().call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _expired(self) -> None:
        self.timer = None
        if self.transport is None or self.busy:
            return
        if self.request is not None or self.http.their_state is not h11.IDLE:
            self._fail(408, f"request not complete within {self.server.request_timeout_s:g} s")
        else:
            self.transport.close()  # an idle keep-alive connection

    def data_received(self, data: bytes) -> None:
        if self.idle:  # the first bytes of a request: from now on it must be complete within the request timeout
            self._arm(idle=False)
        self.http.receive_data(data)
        self._events()

    def eof_received(self) -> bool | None:
        self.http.receive_data(b"")
        self._events()
        return None

    def _events(self) -> None:
        while not self.busy and self.transport is not None:
            try:
                event = self.http.next_event()
            except h11.RemoteProtocolError as exc:
                self._fail(exc.error_status_hint, f"bad HTTP request: {exc}")
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Request):
                headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in event.headers}
                target = event.target.decode("latin-1").split("?", 1)[0]
                self.request = (event.method.decode("ascii"), target, headers, bytearray())
            elif isinstance(event, h11.Data) and self.request is not None:
                self.request[3].extend(event.data)
                if len(self.request[3]) > self.server.max_body:
                    self._fail(413, f"request body exceeds {self.server.max_body} bytes")
                    return
            elif isinstance(event, h11.EndOfMessage) and self.request is not None:
                method, path, headers, body = self.request
                self.request = None
                self.head = method == "HEAD"
                self.busy = True
                self._disarm()
                self.idle = False
                self.transport.pause_reading()
                self.server.spawn(self._answer(HttpRequest(method, path, headers, bytes(body))))
            elif isinstance(event, h11.ConnectionClosed):
                self.transport.close()
                return

    async def _answer(self, request: HttpRequest) -> None:
        try:
            response = await self.server.handler(request)
        except Exception as exc:  # a bug of ours must still get an answer
            log.exception("policy endpoint handler failed")
            response = self.server.error_response(500, f"internal error: {type(exc).__name__}: {exc}")
        self._send(response)
        self.busy = False
        if self.transport is not None:
            with contextlib.suppress(Exception):
                self.transport.resume_reading()
            self._events()

    def _send(self, response: HttpResponse, *, close: bool = False) -> None:
        transport = self.transport
        if transport is None:
            return
        headers = [("content-type", response.content_type), ("content-length", str(len(response.body))),
                   *response.headers]
        if close:
            headers.append(("connection", "close"))
        try:
            data = self.http.send(h11.Response(status_code=response.status, headers=headers))
            if not self.head:
                data = (data or b"") + (self.http.send(h11.Data(data=response.body)) or b"")
            data += self.http.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:
            transport.close()
            return
        transport.write(data)
        if close or self.http.our_state is h11.MUST_CLOSE:
            transport.close()
            return
        try:
            self.http.start_next_cycle()
        except h11.LocalProtocolError:
            transport.close()
            return
        self._arm(idle=True)

    def _fail(self, status: int, message: str) -> None:
        if self.http.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self._send(self.server.error_response(status, message), close=True)
        if self.transport is not None:
            self.transport.close()


class HttpServer:
    """Serves ``handler`` on ``host:port`` (port 0 picks a free one; read it back from ``port``).

    Args:
        handler: Coroutine that answers one request.
        error_response: Builds the body of errors found before the handler runs (bad HTTP, body too large).
        host: Interface to bind.
        port: TCP port.
        max_body: Largest request body accepted, in bytes.
        request_timeout_s: A started request (headers and body) must arrive within this, else 408 and close.
        keepalive_timeout_s: An idle connection is closed after this.
    """

    def __init__(self, handler: Handler, error_response: Callable[[int, str], HttpResponse], *,
                 host: str = "127.0.0.1", port: int = 0, max_body: int = 32 * 2**20, request_timeout_s: float = 30.0,
                 keepalive_timeout_s: float = 300.0) -> None:
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
