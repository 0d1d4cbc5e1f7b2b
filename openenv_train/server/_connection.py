"""One client connection of the env server: HTTP/1.1 requests until ``/ws`` upgrades it to a session.

Each connection is an ``asyncio.Protocol`` (no task per connection), so an idle session costs a few KiB:
HTTP is parsed with h11 until ``/ws`` upgrades, then frames are parsed by the sans-I/O ``websockets``
protocol and answered in order, one request at a time per session.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import inspect
import logging
import struct
from collections import deque
from typing import TYPE_CHECKING, Any

import h11
from websockets.exceptions import PayloadTooBig
from websockets.frames import Frame, Opcode
from websockets.protocol import State as WsState
from websockets.server import ServerProtocol

from ..core import (
    TOKEN_ENV,
    ErrorCode,
    ProtocolError,
    bearer_of,
    decode_client_message,
    dumps,
    encode_error,
    token_matches,
    unauthorized_message,
)
from ..web import Asset
from ._http import RawJson
from ._limits import TokenBucket
from ._session import CLOSE, Session

if TYPE_CHECKING:
    from ._server import EnvServer

__all__ = ["Connection"]

log = logging.getLogger("openenv_train.server")

_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_MAX_BACKLOG = 64
_CLOSE_WAIT_S = 2.0
_HEADER_TIMEOUT_S = 30.0
"""An HTTP connection must send a complete request (headers and body) within this many seconds of connecting or
of its previous response, else it is closed (408 when part of a request came): slowloris clients cannot hold
sockets open forever. Once upgraded, a stalled WebSocket is bounded by the session idle timeout instead."""
_CLOSE_CODES = {ErrorCode.CAPACITY_REACHED: 1013, ErrorCode.FACTORY_ERROR: 1011, ErrorCode.SESSION_ERROR: 1008}


def _text_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    n = len(payload)
    if n < 126:
        return bytes((0x80 | opcode, n)) + payload
    if n < 65536:
        return struct.pack("!BBH", 0x80 | opcode, 126, n) + payload
    return struct.pack("!BBQ", 0x80 | opcode, 127, n) + payload


class Connection(asyncio.Protocol):
    """One client connection: HTTP requests until it upgrades to a WebSocket session."""

    __slots__ = ("server", "transport", "http", "request", "http_busy", "ws", "session", "creating", "backlog",
                 "fragments", "closing", "timer", "denied", "bucket")

    def __init__(self, server: EnvServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.http: h11.Connection | None = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        self.request: Any = None
        self.http_busy = False
        self.ws: ServerProtocol | None = None
        self.session: Session | None = None
        self.creating = False
        self.backlog: deque[tuple[bytes, Opcode]] | None = None
        self.fragments: list[bytes] | None = None
        self.closing = False
        self.timer: asyncio.TimerHandle | None = None
        self.denied: str | None = None  # why the request being read is refused (401), if it is
        self.bucket: TokenBucket | None = None

    # -- transport callbacks ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections.add(self)
        self._arm_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.closing = True
        self._cancel_timer()
        self._release()

    def data_received(self, data: bytes) -> None:
        if self.ws is not None:
            self._ws_data(data)
        elif self.http is not None:
            self.http.receive_data(data)
            self._http_events()

    def eof_received(self) -> bool | None:
        if self.http is not None and self.ws is None:
            self.http.receive_data(b"")
            self._http_events()
        return None

    # -- HTTP --------------------------------------------------------------------------------------
    def _http_events(self) -> None:
        conn = self.http
        assert conn is not None and self.transport is not None
        while not self.http_busy and conn is self.http:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                self._http_fail(exc.error_status_hint, f"bad HTTP request: {exc}")
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Request):
                headers = {k.lower(): v for k, v in event.headers}
                target = event.target.decode("latin-1")
                upgrade = headers.get(b"upgrade", b"").lower() == b"websocket"
                self.denied = self._auth_error(target, headers)
                if upgrade and target.split("?")[0].rstrip("/") == "/ws":
                    self.request = ("UPGRADE", target, headers)
                else:
                    self.request = (event.method.decode("ascii"), target, bytearray())
            elif isinstance(event, h11.Data):
                body = self.request[2]
                body += event.data
                if len(body) > self.server.config.max_http_body:
                    self.server.count_limit("max_http_body")
                    self._http_fail(413, f"request body exceeds the server's max_http_body of "
                                         f"{self.server.config.max_http_body} bytes")
                    return
            elif isinstance(event, h11.EndOfMessage):
                self._cancel_timer()  # the handler's own time is not bounded here
                method, target, extra = self.request
                self.request = None
                if self.denied is not None:
                    self._refuse(self.denied, close=method == "UPGRADE", head=method == "HEAD")
                    continue
                if method == "UPGRADE":
                    self._upgrade(extra)
                    return
                self._http_route(method, target, bytes(extra))
            elif isinstance(event, h11.ConnectionClosed):
                self.transport.close()
                return

    def _auth_error(self, target: str, headers: dict[bytes, bytes]) -> str | None:
        """Why a request lacks the server's token, or None when it has it (or needs none)."""
        token = self.server.config.token
        if token is None or target.split("?", 1)[0].rstrip("/") == "/health":  # health checks stay open
            return None
        given = bearer_of(headers.get(b"authorization"))
        if token_matches(given, token):
            return None
        return unauthorized_message(given, env_var=TOKEN_ENV)

    def _refuse(self, message: str, *, close: bool, head: bool) -> None:
        """401 for a request without the right token (a refused upgrade never becomes a session)."""
        self.denied = None
        self.server.count_limit("token")
        # The Basic challenge lets a browser (e.g. on /web) ask for the token as the password.
        self._http_send(401, {"detail": message, "error": "unauthorized"}, close=close, head=head, extra_headers=[
            ("www-authenticate", 'Bearer realm="openenv-train"'),
            ("www-authenticate", 'Basic realm="openenv-train (password: the token)", charset="UTF-8"'),
        ])

    def _http_route(self, method: str, target: str, body: bytes) -> None:
        try:
            response = self.server.routes.handle(method, target, body)
        except Exception as exc:  # a bug of ours must not kill the connection silently
            log.exception("HTTP handler failed")
            response = (500, {"detail": f"internal error: {type(exc).__name__}: {exc}"})
        if inspect.isawaitable(response):
            self.http_busy = True
            self.transport.pause_reading()  # type: ignore[union-attr]
            self.server.spawn(self._http_finish(response, method == "HEAD"))
        else:
            self._http_send(*response, head=method == "HEAD")

    async def _http_finish(self, awaitable: Any, head: bool) -> None:
        try:
            status, payload = await awaitable
        except Exception as exc:
            log.exception("HTTP handler failed")
            status, payload = 500, {"detail": f"internal error: {type(exc).__name__}: {exc}"}
        self.http_busy = False
        if self.closing:
            return
        self._http_send(status, payload, head=head)
        with contextlib.suppress(Exception):
            self.transport.resume_reading()  # type: ignore[union-attr]
        if self.http is not None:
            self._http_events()

    def _http_send(self, status: int, payload: Any, *, head: bool = False, close: bool = False,
                   extra_headers: list[tuple[str, str]] | None = None) -> None:
        conn = self.http
        transport = self.transport
        if conn is None or transport is None or self.closing:
            return
        headers = [("content-type", "application/json")]
        if isinstance(payload, Asset):  # a /web file: bytes with their own content type
            body, headers = payload.body, payload.header_list()
        else:
            try:
                body = (payload if isinstance(payload, RawJson) else dumps(payload)).encode()
            except (TypeError, ValueError) as exc:
                status, body = 500, dumps({"detail": f"response is not JSON-serialisable: {exc}"}).encode()
        headers.append(("content-length", str(len(body))))
        headers += extra_headers or ()
        if close:
            headers.append(("connection", "close"))
        try:
            data = conn.send(h11.Response(status_code=status, headers=headers))
            if not head:
                data += conn.send(h11.Data(data=body))
            data += conn.send(h11.EndOfMessage())
        except h11.LocalProtocolError:
            transport.close()
            return
        transport.write(data)
        if conn.our_state is h11.MUST_CLOSE or close:
            transport.close()
            self.http = None
            return
        try:
            conn.start_next_cycle()
        except h11.LocalProtocolError:
            transport.close()
            self.http = None
            return
        self._arm_timer()

    def _http_fail(self, status: int, message: str) -> None:
        conn = self.http
        transport = self.transport
        assert transport is not None
        if conn is not None and conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self._http_send(status, {"detail": message}, close=True)
        transport.close()
        self.http = None

    def _arm_timer(self) -> None:
        self._cancel_timer()
        self.timer = asyncio.get_running_loop().call_later(_HEADER_TIMEOUT_S, self._http_timeout)

    def _cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _http_timeout(self) -> None:
        self.timer = None
        conn, transport = self.http, self.transport
        if conn is None or transport is None or self.ws is not None or self.http_busy or self.closing:
            return
        if conn.their_state is h11.IDLE and not conn.trailing_data[0]:  # an idle keep-alive: close quietly
            transport.close()
            self.http = None
            return
        message = f"request not completed within {_HEADER_TIMEOUT_S:g}s"
        if conn.our_state is h11.SEND_RESPONSE:
            self._http_fail(408, message)
            return
        body = dumps({"detail": message}).encode()
        transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        transport.close()
        self.http = None

    # -- WebSocket ---------------------------------------------------------------------------------
    def _upgrade(self, headers: dict[bytes, bytes]) -> None:
        conn, transport = self.http, self.transport
        assert conn is not None and transport is not None
        key = headers.get(b"sec-websocket-key", b"")
        if headers.get(b"sec-websocket-version") != b"13" or len(base64.b64decode(key + b"===", validate=False)) != 16:
            self._http_fail(400, "invalid WebSocket handshake: need Sec-WebSocket-Version 13 and a 16-byte key")
            return
        trailing = conn.trailing_data[0]
        self.http = None
        self._cancel_timer()
        accept = base64.b64encode(hashlib.sha1(key + _WS_GUID).digest())
        transport.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        self.ws = ServerProtocol(state=WsState.OPEN, max_size=self.server.config.max_message_size)
        registry = self.server.registry
        if registry.executor is None:
            try:
                self.session = registry.create("ws")
            except ProtocolError as exc:
                self._ws_fail(exc)
                return
        else:  # a blocking env's constructor runs in a worker thread; frames wait in the backlog
            self.creating = True
            self.server.spawn(self._create_session())
        if trailing:
            self._ws_data(bytes(trailing))

    async def _create_session(self) -> None:
        try:
            session = await self.server.registry.create_async("ws")
        except ProtocolError as exc:
            self.creating = False
            self._ws_fail(exc)
            return
        self.creating = False
        if self.closing:
            await self.server.registry.close(session)
            return
        self.session = session
        self._drain()

    def _ws_data(self, data: bytes) -> None:
        ws = self.ws
        assert ws is not None
        ws.receive_data(data)
        try:
            for frame in ws.events_received():
                if self.closing:
                    break
                if isinstance(frame, Frame):
                    self._frame(frame)
            if isinstance(ws.parser_exc, PayloadTooBig) and not self.closing:  # once: more data may follow
                # An error frame the client can read, ahead of the close frame websockets has queued.
                limit = self.server.config.max_message_size
                self.server.count_limit("max_message_size")
                self._write(encode_error(ProtocolError(
                    ErrorCode.SESSION_ERROR,
                    f"message too big: {ws.parser_exc}; the server's max_message_size is "
                    f"{limit} bytes (serve with a larger --max-message-size)",
                    limit="max_message_size", value=limit,
                )))
                self.closing = True
                self._release()
        except Exception as exc:  # never let a bug of ours drop the connection without a word
            log.exception("session failed while handling frames")
            self._ws_fail(ProtocolError(ErrorCode.SESSION_ERROR, f"internal server error: {type(exc).__name__}: {exc}"))
        self._flush()

    def _frame(self, frame: Frame) -> None:
        opcode = frame.opcode
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if frame.fin:
                self._message(bytes(frame.data), opcode)
            else:
                self.fragments = [opcode.value.to_bytes(1, "big"), bytes(frame.data)]
        elif opcode is Opcode.CONT and self.fragments is not None:
            self.fragments.append(bytes(frame.data))
            if frame.fin:
                kind, *parts = self.fragments
                self.fragments = None
                self._message(b"".join(parts), Opcode.TEXT if kind == b"\x01" else Opcode.BINARY)
        elif opcode is Opcode.CLOSE:  # websockets has queued the reply; nothing more is read
            self.closing = True
            self._release()

    def _message(self, data: bytes, opcode: Opcode) -> None:
        session = self.session
        if self.creating or self.backlog or (session is not None and session.busy):
            if self.backlog is None:
                self.backlog = deque()
            self.backlog.append((data, opcode))
            if len(self.backlog) >= _MAX_BACKLOG and self.transport is not None:
                self.transport.pause_reading()
            return
        self._process(data, opcode)

    def _process(self, data: bytes, opcode: Opcode) -> None:
        session = self.session
        if session is None or self.closing:
            return
        if opcode is Opcode.TEXT:
            try:
                payload: str | bytes = data.decode()
            except UnicodeDecodeError as exc:
                self._ws_fail(ProtocolError(ErrorCode.SESSION_ERROR, f"text frame is not valid UTF-8 ({exc})"), 1007)
                return
        else:
            payload = data
        try:
            message = decode_client_message(payload)
            if message.type != "close" and not self._within_rate():
                return
            reply = session.handle(message, self.server.mcp)
        except ProtocolError as exc:
            self._reply_error(exc)
            return
        except Exception as exc:
            log.exception("session %s: unexpected failure", session.id)
            self._reply_error(ProtocolError(ErrorCode.EXECUTION_ERROR, f"{type(exc).__name__}: {exc}"))
            return
        if reply is CLOSE:
            self._ws_close(1000, "")
        elif isinstance(reply, str):
            self._send(reply)
        else:
            session.busy = True
            self.server.spawn(self._finish(session, reply))

    def _within_rate(self) -> bool:
        """Take one message from the session's rate budget; past it, answer with an error frame instead."""
        config = self.server.config
        rate = config.max_messages_per_s
        if rate is None:
            return True
        if self.bucket is None:
            self.bucket = TokenBucket(rate, config.message_burst or max(1, int(rate)))
        wait_s = self.bucket.take()
        if wait_s == 0.0:
            return True
        self.server.count_limit("max_messages_per_s")
        # Not a closing error: the session and its episode stay; the client may retry after retry_after_s.
        self._reply_error(ProtocolError(
            ErrorCode.EXECUTION_ERROR,
            f"rate limit: this session sent more than max_messages_per_s={rate:g} (burst {self.bucket.burst}); "
            f"the message was not run; retry in {wait_s:.3f}s or serve with a larger --max-messages-per-s",
            limit="max_messages_per_s", value=rate, burst=self.bucket.burst, retry_after_s=round(wait_s, 3),
        ))
        return False

    async def _finish(self, session: Session, reply: Any) -> None:
        try:
            frame = await reply
        except ProtocolError as exc:
            frame = exc
        except Exception as exc:
            log.exception("session %s: unexpected failure", session.id)
            frame = ProtocolError(ErrorCode.EXECUTION_ERROR, f"{type(exc).__name__}: {exc}")
        session.busy = False
        session.touch()
        if self.closing:
            return
        if isinstance(frame, ProtocolError):
            self._reply_error(frame)
        else:
            self._send(frame)
        self._drain()
        self._flush()

    def _drain(self) -> None:
        """Process frames that arrived while a request was in flight, in order."""
        backlog = self.backlog
        if backlog is None:
            return
        while backlog and self.session is not None and not self.session.busy and not self.closing:
            self._process(*backlog.popleft())
        if len(backlog) < _MAX_BACKLOG // 2 and self.transport is not None and not self.closing:
            with contextlib.suppress(Exception):
                self.transport.resume_reading()

    def _reply_error(self, exc: ProtocolError) -> None:
        if exc.code.closes_connection:
            self._ws_fail(exc)
        else:
            self._send(encode_error(exc))

    def _write(self, text: str) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(_text_frame(text.encode()))

    def _send(self, text: str) -> None:
        if not self.closing:
            self._write(text)

    def _ws_fail(self, exc: ProtocolError, code: int | None = None) -> None:
        self._send(encode_error(exc))
        self._ws_close(code or _CLOSE_CODES.get(exc.code, 1011), exc.code.value)

    def _ws_close(self, code: int, reason: str) -> None:
        """Send a close frame and release the session; the socket closes when the client answers (or in 2 s)."""
        ws, transport = self.ws, self.transport
        if ws is None or transport is None or self.closing:
            return
        self.closing = True
        if ws.state is WsState.OPEN:
            ws.send_close(code, reason[:120])
        self._flush()
        self._release()
        asyncio.get_running_loop().call_later(_CLOSE_WAIT_S, transport.abort)

    def _release(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            self.server.spawn(self.server.registry.close(session))

    def _flush(self) -> None:
        ws, transport = self.ws, self.transport
        if ws is None or transport is None:
            return
        for chunk in ws.data_to_send():
            if chunk:
                transport.write(chunk)
            elif transport.can_write_eof():
                # websockets asks for EOF. Half-close and let the peer's EOF (or the timer) end it: closing with
                # its data still arriving (an oversized frame) would send a reset that drops our error frame.
                transport.write_eof()
                asyncio.get_running_loop().call_later(_CLOSE_WAIT_S, transport.abort)
            else:
                transport.close()
        if ws.state is WsState.CLOSED:
            transport.close()

    def shut(self, code: int, reason: str) -> None:
        """Close the connection: a WebSocket close frame, or the HTTP socket."""
        if self.ws is not None:
            self._ws_close(code, reason)
        elif self.transport is not None:
            self.transport.close()
