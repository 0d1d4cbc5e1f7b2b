"""One client connection of the env server: HTTP/1.1 requests until ``/ws`` upgrades it to a session.

Each connection is an ``asyncio.Protocol`` (no task per connection), so an idle session costs a few KiB.
HTTP is the shared core's :class:`~openenv_train.http.HttpConnection` (h11, body limit, slowloris timer, send
path); this class adds the token check, the routes and the ``/ws`` upgrade. After it, frames are parsed by the
sans-I/O ``websockets`` protocol, the protocol decisions are :class:`~openenv_train.server._ws_session.WsSession`'s
(messages in, actions out), and this class performs them: one request at a time per session, in order, every
outgoing WebSocket byte through :meth:`Connection._ws_write`. Its :class:`Phase` says where it is.
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
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from websockets.exceptions import PayloadTooBig
from websockets.frames import Frame, Opcode
from websockets.protocol import State as WsState
from websockets.server import ServerProtocol

from ..core import TOKEN_ENV, ErrorCode, ProtocolError, bearer_of, dumps, token_matches, unauthorized_message
from ..http import Asset, HttpConnection, HttpLimits, HttpRequest, HttpResponse
from ._routes import RawJson
from ._session import Session
from ._ws_session import CLOSE_FRAME, Close, Phase, Run, WsSession

if TYPE_CHECKING:  # types only: _server imports this module to serve each connection
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
_DONE = (Phase.CLOSING, Phase.CLOSED)


def _text_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    n = len(payload)
    if n < 126:
        return bytes((0x80 | opcode, n)) + payload
    if n < 65536:
        return struct.pack("!BBH", 0x80 | opcode, 126, n) + payload
    return struct.pack("!BBQ", 0x80 | opcode, 127, n) + payload


def _error_response(status: int, message: str) -> HttpResponse:
    return HttpResponse(status, dumps({"detail": message}).encode())


def _http_response(status: int, payload: Any) -> HttpResponse:
    """A route's ``(status, payload)`` as a response: a /web file with its own headers, or JSON."""
    if isinstance(payload, Asset):
        return payload.response(status)
    try:
        body = (payload if isinstance(payload, RawJson) else dumps(payload)).encode()
    except (TypeError, ValueError) as exc:
        status, body = 500, dumps({"detail": f"response is not JSON-serialisable: {exc}"}).encode()
    return HttpResponse(status, body)


def _session_id_query(target: str) -> str | None:
    """The ``session_id`` query parameter of a request target, if any."""
    _, _, query = target.partition("?")
    values = parse_qs(query).get("session_id")
    return values[0] if values else None


async def _later(answer: Awaitable[tuple[int, Any]]) -> HttpResponse:
    return _http_response(*await answer)


class Connection(HttpConnection):
    """One client connection: HTTP requests until it upgrades to a WebSocket session."""

    __slots__ = ("server", "phase", "ws", "rules", "session", "attached", "backlog", "denied", "_limits")

    def __init__(self, server: EnvServer) -> None:
        super().__init__(server.tasks, _error_response)
        self.server = server
        self.phase = Phase.HTTP
        self.ws: ServerProtocol | None = None
        self.rules: WsSession | None = None
        self.session: Session | None = None
        self.attached = False  # the session is another's (``/ws?session_id=``): leaving detaches, never closes it
        self.backlog: deque[tuple[bytes, Opcode]] | None = None
        self.denied: str | None = None  # why the request being read is refused (401), if it is
        config = server.config
        self._limits = HttpLimits(max_body=config.max_http_body, request_timeout_s=_HEADER_TIMEOUT_S,
                                  from_first_byte=False)

    # -- HTTP (the shared core's hooks) ------------------------------------------------------------
    def limits(self) -> HttpLimits:
        return self._limits

    def timeout_message(self, seconds: float) -> str:
        return f"request not completed within {seconds:g}s"

    def body_too_big(self, limit: int) -> str:
        self.server.count_limit("max_http_body")
        return f"request body exceeds the server's max_http_body of {limit} bytes"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.server.connections.add(self)
        super().connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.phase = Phase.CLOSED
        super().connection_lost(exc)
        self._release()

    def data_received(self, data: bytes) -> None:
        if self.ws is not None:
            self._ws_data(data)
        else:
            super().data_received(data)

    def on_head(self, request: HttpRequest) -> None:
        self.denied = self._auth_error(request.path, request.headers)

    def on_request(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse] | None:
        path = request.path.rstrip("/")
        # /ws carries OpenEnv session messages; /mcp bare JSON-RPC (MCP over WebSocket, as OpenEnv 0.10).
        upgrade = request.headers.get("upgrade", "").lower() == "websocket" and path in ("/ws", "/mcp")
        if self.denied is not None:
            return self._refusal(self.denied, close=upgrade)
        if upgrade:
            self._upgrade(request.headers, mcp=path == "/mcp", attach_to=_session_id_query(request.target)
                          if path == "/ws" else None)
            return None
        try:
            answer = self.server.routes.handle(request.method, request.target, request.body)
        except Exception as exc:  # a bug of ours must not kill the connection silently
            log.exception("HTTP handler failed")
            return _error_response(500, f"internal error: {type(exc).__name__}: {exc}")
        if inspect.isawaitable(answer):
            return _later(answer)
        return _http_response(*answer)

    def _auth_error(self, path: str, headers: dict[str, str]) -> str | None:
        """Why a request lacks the server's token, or None when it has it (or needs none)."""
        token = self.server.config.token
        if token is None or path.rstrip("/") == "/health":  # health checks stay open
            return None
        given = bearer_of(headers.get("authorization"))
        if token_matches(given, token):
            return None
        return unauthorized_message(given, env_var=TOKEN_ENV)

    def _refusal(self, message: str, *, close: bool) -> HttpResponse:
        """401 for a request without the right token (a refused upgrade never becomes a session)."""
        self.denied = None
        self.server.count_limit("token")
        # The Basic challenge lets a browser (e.g. on /web) ask for the token as the password.
        return HttpResponse(401, dumps({"detail": message, "error": "unauthorized"}).encode(), [
            ("www-authenticate", 'Bearer realm="openenv-train"'),
            ("www-authenticate", 'Basic realm="openenv-train (password: the token)", charset="UTF-8"'),
        ], close=close)

    # -- WebSocket ---------------------------------------------------------------------------------
    def _upgrade(self, headers: dict[str, str], *, mcp: bool = False, attach_to: str | None = None) -> None:
        key = headers.get("sec-websocket-key", "").encode("latin-1")
        if headers.get("sec-websocket-version") != "13" or len(base64.b64decode(key + b"===", validate=False)) != 16:
            self.fail(400, "invalid WebSocket handshake: need Sec-WebSocket-Version 13 and a 16-byte key")
            return
        transport = self.transport
        assert transport is not None
        trailing = self.detach()
        accept = base64.b64encode(hashlib.sha1(key + _WS_GUID).digest())
        transport.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        config = self.server.config
        self.ws = ServerProtocol(state=WsState.OPEN, max_size=config.max_message_size)
        self.rules = WsSession(max_messages_per_s=config.max_messages_per_s, message_burst=config.message_burst,
                               max_message_size=config.max_message_size, count=self.server.count_limit, mcp=mcp)
        registry = self.server.registry
        if attach_to:  # OpenEnv 0.10: share the session an ``openenv/session/create`` made (MCPToolClient's way)
            self.phase = Phase.OPEN
            try:
                self.session = registry.attach(attach_to)
            except ProtocolError as exc:
                self._ws_fail(exc)
                return
            self.attached = True
        elif registry.executor is None:
            self.phase = Phase.OPEN
            try:
                self.session = registry.create(self.rules.kind)
            except ProtocolError as exc:
                self._ws_fail(exc)
                return
        else:  # a blocking env's constructor runs in a worker thread; frames wait in the backlog
            self.phase = Phase.CREATING
            self.server.spawn(self._create_session())
        if trailing:
            self._ws_data(trailing)

    async def _create_session(self) -> None:
        try:
            assert self.rules is not None
            session = await self.server.registry.create_async(self.rules.kind)
        except ProtocolError as exc:
            self._ws_fail(exc)
            return
        if self.phase is not Phase.CREATING:  # the client left (or the server shut it) meanwhile
            await self.server.registry.close(session)
            return
        self.phase = Phase.OPEN
        self.session = session
        self._drain()

    def _ws_data(self, data: bytes) -> None:
        ws, rules = self.ws, self.rules
        assert ws is not None and rules is not None
        ws.receive_data(data)
        try:
            for frame in ws.events_received():
                if self.phase in _DONE:
                    break
                if isinstance(frame, Frame):
                    message = rules.frame(frame)
                    if message is CLOSE_FRAME:  # websockets has queued the reply; nothing more is read
                        self.phase = Phase.CLOSING
                        self._release()
                    elif message is not None:
                        self._message(*message)
            if isinstance(ws.parser_exc, PayloadTooBig) and self.phase not in _DONE:  # once: more data may follow
                self._act(rules.too_big(ws.parser_exc))
        except Exception as exc:  # never let a bug of ours drop the connection without a word
            log.exception("session failed while handling frames")
            self._ws_fail(ProtocolError(ErrorCode.SESSION_ERROR, f"internal server error: {type(exc).__name__}: {exc}"))
        self._flush()

    def _message(self, data: bytes, opcode: Opcode) -> None:
        session = self.session
        if self.phase is Phase.CREATING or self.backlog or (session is not None and session.busy):
            if self.backlog is None:
                self.backlog = deque()
            self.backlog.append((data, opcode))
            if len(self.backlog) >= _MAX_BACKLOG and self.transport is not None:
                self.transport.pause_reading()
            return
        self._process(data, opcode)

    def _process(self, data: bytes, opcode: Opcode) -> None:
        session = self.session
        if session is None or self.phase is not Phase.OPEN:
            return
        assert self.rules is not None
        self._act(self.rules.message(data, opcode, session, self.server.mcp))

    def _act(self, actions: list[Any]) -> None:
        """Perform the session's actions, in order."""
        for action in actions:
            if isinstance(action, str):
                self._send(action)
            elif isinstance(action, Run):
                session = self.session
                assert session is not None
                session.busy = True
                self.server.spawn(self._finish(session, action.reply))
            elif isinstance(action, Close):
                self._ws_close(action.code, action.reason)
            else:  # Stop
                self.phase = Phase.CLOSING
                self._release()

    async def _finish(self, session: Session, reply: Awaitable[Any]) -> None:
        outcome: Any
        try:
            outcome = await reply
        except Exception as exc:
            outcome = exc
        session.busy = False
        session.touch()
        if self.phase in _DONE:
            return
        assert self.rules is not None
        self._act(self.rules.finished(outcome, session))
        self._drain()
        self._flush()

    def _drain(self) -> None:
        """Process frames that arrived while a request was in flight, in order."""
        backlog = self.backlog
        if backlog is None:
            return
        while backlog and self.session is not None and not self.session.busy and self.phase is Phase.OPEN:
            self._process(*backlog.popleft())
        if len(backlog) < _MAX_BACKLOG // 2 and self.transport is not None and self.phase not in _DONE:
            with contextlib.suppress(Exception):
                self.transport.resume_reading()

    def _ws_write(self, data: bytes) -> None:
        """The one path of outgoing WebSocket bytes (our text frames and websockets' control frames)."""
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(data)

    def _send(self, text: str) -> None:
        if self.phase not in _DONE:
            self._ws_write(_text_frame(text.encode()))

    def _ws_fail(self, exc: ProtocolError, code: int | None = None) -> None:
        """An error frame, then close (the reaper's and a failed session start's way out too)."""
        rules = self.rules
        assert rules is not None
        self._act(rules.fail(exc, code))

    def _ws_close(self, code: int, reason: str) -> None:
        """Send a close frame and release the session; the socket closes when the client answers (or in 2 s)."""
        ws, transport = self.ws, self.transport
        if ws is None or transport is None or self.phase in _DONE:
            return
        self.phase = Phase.CLOSING
        if ws.state is WsState.OPEN:
            ws.send_close(code, reason[:120])
        self._flush()
        self._release()
        asyncio.get_running_loop().call_later(_CLOSE_WAIT_S, transport.abort)

    def _release(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            registry = self.server.registry
            self.server.spawn(registry.detach(session) if self.attached else registry.close(session))

    def _flush(self) -> None:
        ws, transport = self.ws, self.transport
        if ws is None or transport is None:
            return
        for chunk in ws.data_to_send():
            if chunk:
                self._ws_write(chunk)
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
