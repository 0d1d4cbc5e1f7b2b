"""One HTTP/1.1 connection on h11, as an ``asyncio.Protocol``: the part both servers share.

:class:`HttpConnection` parses requests, bounds their bodies, times out slow and idle clients (no slowloris),
runs one request at a time (an async answer pauses reading until it is sent) and owns the one send path of
responses, whole (:class:`HttpResponse`) or streamed as produced (:class:`HttpStream`, chunked; a client that goes
away mid-stream cancels the task producing it). A server subclasses it and says what a request means
(:meth:`HttpConnection.on_request`); the env server's connection adds the ``/ws`` upgrade by taking the socket
over with :meth:`HttpConnection.detach`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import h11

from ._tasks import TaskSet

__all__ = ["HttpConnection", "HttpLimits", "HttpRequest", "HttpResponse", "HttpStream"]

log = logging.getLogger("openenv_train.http")


@dataclass
class HttpRequest:
    """One request: method, path (no query), lower-cased headers and the body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    target: str = ""
    """The request target as sent (path and query)."""


@dataclass
class HttpResponse:
    """One response: status, body bytes and extra headers (``content_type`` None: the headers name it)."""

    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str | None = "application/json"
    close: bool = False
    """Close the connection after this response."""


@dataclass
class HttpStream:
    """A response whose body is sent while it is produced (chunked transfer encoding), e.g. server-sent events.

    If the client goes away, the task iterating ``chunks`` is cancelled and ``chunks`` is closed, so its producer
    can stop its work and say what was cut.
    """

    status: int
    chunks: AsyncGenerator[bytes, None]
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = "text/event-stream"


@dataclass(frozen=True)
class HttpLimits:
    """How long and how much a connection may take."""

    max_body: int = 32 * 2**20
    """Largest request body, in bytes (more gets a 413 and the connection is closed)."""
    request_timeout_s: float = 30.0
    """A started request (headers and body) must arrive within this, else 408 and close; a client reading a stream
    that takes nothing for this long is dropped."""
    keepalive_timeout_s: float = 300.0
    """An idle connection (no request started) is closed after this."""
    from_first_byte: bool = True
    """The request timeout counts from the request's first byte; False: from the connection's start or its
    previous response (then ``keepalive_timeout_s`` is not used)."""


class HttpConnection(asyncio.Protocol):
    """An h11 server connection; subclasses implement :meth:`on_request` (and may refine the hooks)."""

    # slots: an idle connection is kept per session, so it should cost a few hundred bytes, not a dict
    __slots__ = ("tasks", "error_response", "transport", "http", "request", "body", "head", "busy", "timer", "idle",
                 "streaming", "writable")

    def __init__(self, tasks: TaskSet, error_response: Callable[[int, str], HttpResponse]) -> None:
        self.tasks = tasks
        self.error_response = error_response
        self.transport: asyncio.Transport | None = None
        self.http: h11.Connection | None = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        self.request: HttpRequest | None = None  # the request being read
        self.body = bytearray()
        self.head = False  # the response being sent answers a HEAD request
        self.busy = False  # an async answer is in flight; reading is paused
        self.timer: asyncio.TimerHandle | None = None
        self.idle = True
        self.streaming: asyncio.Task[Any] | None = None  # the task sending an HttpStream
        self.writable: asyncio.Event | None = None  # cleared while the transport's buffer is full

    # -- what a server says ----------------------------------------------------------------------
    def limits(self) -> HttpLimits:
        """This connection's limits (read when used, so a server may change them while it runs)."""
        return HttpLimits()

    def timeout_message(self, seconds: float) -> str:
        """The message of a 408."""
        return f"request not complete within {seconds:g} s"

    def body_too_big(self, limit: int) -> str:
        """The message of a 413 (a subclass may also count the event)."""
        return f"request body exceeds {limit} bytes"

    def on_head(self, request: HttpRequest) -> None:
        """The request's head has arrived (before its body): e.g. check its token."""

    def on_request(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse | HttpStream] | None:
        """Answer a complete request: a response now, an awaitable of one or of a stream (reading pauses until it
        is sent), or None when the subclass took the connection over (:meth:`detach`)."""
        raise NotImplementedError

    def on_answer_failed(self, exc: Exception) -> HttpResponse:
        """The answer to an async request raised: a bug of ours must still get an answer."""
        log.exception("HTTP handler failed")
        return self.error_response(500, f"internal error: {type(exc).__name__}: {exc}")

    # -- transport callbacks ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.arm(idle=True)

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        if self.streaming is not None:  # nobody reads the rest: stop producing it
            self.streaming.cancel()
        if self.writable is not None:
            self.writable.set()

    def pause_writing(self) -> None:
        if self.writable is None:
            self.writable = asyncio.Event()
        self.writable.clear()

    def resume_writing(self) -> None:
        if self.writable is not None:
            self.writable.set()

    def data_received(self, data: bytes) -> None:
        if self.http is None:
            return
        if self.streaming is not None and self.transport is not None:
            # Reading resumed only to see the client leave; a pipelined request waits in h11's buffer.
            self.transport.pause_reading()
        if self.idle and self.limits().from_first_byte:  # a request starts: it must be complete in time
            self.arm(idle=False)
        self.http.receive_data(data)
        self.events()

    def eof_received(self) -> bool | None:
        if self.http is not None:
            self.http.receive_data(b"")
            self.events()
        return None

    # -- timers (no slowloris) -------------------------------------------------------------------
    def arm(self, *, idle: bool) -> None:
        """Close the connection unless a request completes in time (see :class:`HttpLimits`)."""
        self.disarm()
        self.idle = idle
        limits = self.limits()
        seconds = limits.keepalive_timeout_s if idle and limits.from_first_byte else limits.request_timeout_s
        self.timer = asyncio.get_running_loop().call_later(seconds, self._expired)

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _expired(self) -> None:
        self.timer = None
        conn, transport = self.http, self.transport
        if conn is None or transport is None or self.busy or transport.is_closing():
            return
        if self.request is None and conn.their_state is h11.IDLE and not conn.trailing_data[0]:
            transport.close()  # an idle keep-alive connection: close quietly
            self.http = None
            return
        message = self.timeout_message(self.limits().request_timeout_s)
        if conn.our_state is h11.SEND_RESPONSE:
            self.fail(408, message)
            return
        # Part of a request head came: h11 cannot answer a request it has not parsed, so write the 408 itself.
        response = self.error_response(408, message)
        head = [("content-type", response.content_type)] if response.content_type else []
        lines = [f"{k}: {v}" for k, v in [*head, *response.headers, ("connection", "close"),
                                          ("content-length", str(len(response.body)))]]
        transport.write(("HTTP/1.1 408 Request Timeout\r\n" + "\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
                        + response.body)
        transport.close()
        self.http = None

    # -- requests --------------------------------------------------------------------------------
    def events(self) -> None:
        """Handle the events h11 has parsed, one request at a time."""
        conn = self.http
        while not self.busy and conn is not None and conn is self.http and self.transport is not None:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                self.fail(exc.error_status_hint, f"bad HTTP request: {exc}")
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Request):
                headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in event.headers}
                target = event.target.decode("latin-1")
                self.request = HttpRequest(event.method.decode("ascii"), target.split("?", 1)[0], headers, b"",
                                           target)
                self.body = bytearray()
                self.on_head(self.request)
            elif isinstance(event, h11.Data) and self.request is not None:
                self.body += event.data
                limit = self.limits().max_body
                if len(self.body) > limit:
                    self.fail(413, self.body_too_big(limit))
                    return
            elif isinstance(event, h11.EndOfMessage) and self.request is not None:
                request, self.request = self.request, None
                request.body, self.body = bytes(self.body), bytearray()
                self.disarm()  # the answer's own time is not bounded here
                self.idle = False
                self.head = request.method == "HEAD"
                answer = self.on_request(request)
                if answer is None:
                    return
                if isinstance(answer, HttpResponse):
                    self.send(answer)
                else:
                    self.busy = True
                    self.transport.pause_reading()
                    self.tasks.spawn(self._answer(answer))
            elif isinstance(event, h11.ConnectionClosed):
                self.transport.close()
                return

    async def _answer(self, answer: Awaitable[HttpResponse | HttpStream]) -> None:
        try:
            response = await answer
        except Exception as exc:
            response = self.on_answer_failed(exc)
        if isinstance(response, HttpStream):
            await self.send_stream(response)
        self.busy = False
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if not isinstance(response, HttpStream):
            self.send(response)
        with contextlib.suppress(Exception):
            transport.resume_reading()
        self.events()

    # -- the send path ---------------------------------------------------------------------------
    def send(self, response: HttpResponse, *, close: bool = False) -> None:
        """Write ``response`` (no body for HEAD); close after it when asked or when HTTP requires it."""
        conn, transport = self.http, self.transport
        if conn is None or transport is None or transport.is_closing():
            return
        headers = [("content-type", response.content_type)] if response.content_type else []
        headers += [("content-length", str(len(response.body))), *response.headers]
        close = close or response.close
        if close:
            headers.append(("connection", "close"))
        try:
            data = conn.send(h11.Response(status_code=response.status, headers=headers)) or b""
            if not self.head:
                data += conn.send(h11.Data(data=response.body)) or b""
            data += conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:
            self._close()
            return
        transport.write(data)
        self._next_cycle(conn, close=close)

    def _next_cycle(self, conn: h11.Connection, *, close: bool = False) -> None:
        """After an answer: close the connection, or wait idle for the next request on it."""
        self.head = False
        if close or conn.our_state is h11.MUST_CLOSE:
            self._close()
            return
        try:
            conn.start_next_cycle()
        except h11.LocalProtocolError:
            self._close()
            return
        self.arm(idle=True)

    async def send_stream(self, stream: HttpStream) -> None:
        """Send ``stream``'s head, then each chunk as it comes (waiting while the client does not read).

        While it runs, reading is resumed so that a client closing its connection is seen at once: the task
        running this is then cancelled (:meth:`connection_lost`) and ``stream.chunks`` closed.
        """
        conn, transport = self.http, self.transport
        async with contextlib.aclosing(stream.chunks) as chunks:
            if conn is None or transport is None or transport.is_closing():
                # The client left before the head: start the producer anyway, so that closing it runs its cleanup
                # (a generator closed before its first step runs none).
                with contextlib.suppress(Exception, StopAsyncIteration):
                    await anext(chunks)
                return
            # No content-length: h11 frames the body in chunks (HTTP/1.1) or by closing the connection (1.0).
            headers = [("content-type", stream.content_type), ("cache-control", "no-cache"), *stream.headers]
            try:
                transport.write(conn.send(h11.Response(status_code=stream.status, headers=headers)) or b"")
            except h11.LocalProtocolError:
                self._close()
                return
            self.streaming = asyncio.current_task()
            try:
                transport.resume_reading()
                async for chunk in chunks:
                    if chunk and not self.head:
                        transport.write(conn.send(h11.Data(data=chunk)) or b"")
                        await self._drained(transport)
                transport.write(conn.send(h11.EndOfMessage()) or b"")
            except Exception:  # the head is sent: a broken producer can only cut the body short
                log.exception("HTTP stream failed")
                self._close()
                return
            finally:
                self.streaming = None
                with contextlib.suppress(Exception):
                    transport.pause_reading()
        self._next_cycle(conn)

    async def _drained(self, transport: asyncio.Transport) -> None:
        """Wait while the transport's buffer is full; a client that reads nothing for the request timeout is
        dropped (its stream is then cancelled)."""
        writable = self.writable
        if writable is None or writable.is_set() or transport.is_closing():
            return
        try:
            await asyncio.wait_for(writable.wait(), self.limits().request_timeout_s)
        except TimeoutError:
            transport.abort()
            raise asyncio.CancelledError from None

    def fail(self, status: int, message: str) -> None:
        """Answer ``status`` (when a response can still be sent) and close."""
        conn = self.http
        if conn is not None and conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self.send(self.error_response(status, message), close=True)
        self._close()

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.http = None

    def detach(self) -> bytes:
        """Stop speaking HTTP (an upgrade takes the socket over); returns the bytes read past the request."""
        conn, self.http = self.http, None
        self.disarm()
        return bytes(conn.trailing_data[0]) if conn is not None else b""

