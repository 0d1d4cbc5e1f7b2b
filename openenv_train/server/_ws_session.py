"""The protocol decisions of one ``/ws`` session, sans I/O: messages in, actions out.

:class:`WsSession` reassembles fragmented frames, decodes and rate-limits messages, runs them on the env
session and turns every outcome (a reply, an error that keeps or closes the session, a message too big) into
actions; :class:`~openenv_train.server._connection.Connection` performs them on the socket. Nothing here
touches a socket or the event loop, so the rules are unit-tested without either.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from websockets.frames import Frame, Opcode

from ..core import ErrorCode, JsonRpcCode, ProtocolError, decode_client_message, dumps, encode_error, jsonrpc_error
from ._limits import TokenBucket
from ._session import CLOSE, Session

__all__ = ["CLOSE_CODES", "Action", "Close", "Phase", "Run", "Stop", "WsSession"]

log = logging.getLogger("openenv_train.server")

#: The WebSocket close code of each closing error.
CLOSE_CODES = {ErrorCode.CAPACITY_REACHED: 1013, ErrorCode.FACTORY_ERROR: 1011, ErrorCode.SESSION_ERROR: 1008}


class Phase(enum.Enum):
    """Where a connection of the env server is."""

    HTTP = "http"
    """HTTP/1.1 requests (until ``/ws`` upgrades)."""
    CREATING = "creating"
    """Upgraded; the env session is being built in a worker thread (frames wait in the backlog)."""
    OPEN = "open"
    """A session answers messages, one at a time."""
    CLOSING = "closing"
    """A close frame was sent or received (or a message was too big): nothing more is handled."""
    CLOSED = "closed"
    """The socket is gone."""


@dataclass(frozen=True, slots=True)
class Close:
    """Close the session: a close frame with ``code`` and ``reason``, then release the env."""

    code: int
    reason: str


@dataclass(frozen=True, slots=True)
class Run:
    """Await ``reply`` (an async env call; the session is busy meanwhile) and pass its outcome to
    :meth:`WsSession.finished`."""

    reply: Awaitable[Any]


@dataclass(frozen=True, slots=True)
class Stop:
    """Handle nothing more and release the env; websockets has queued its own close frame."""


#: A ``str`` is a text frame to send.
Action = str | Close | Run | Stop

#: :meth:`WsSession.frame` saw a close frame.
CLOSE_FRAME: Any = object()


class WsSession:
    """The rules of one session's messages.

    Args:
        max_messages_per_s: the per-session rate cap (None: no cap).
        message_burst: messages allowed at once before the cap applies (None: ``max(1, rate)``).
        max_message_size: the server's limit on one message, named in the message-too-big error.
        count: called with a limit's name each time it is hit (the server's ``limit_hits``).
        mcp: the ``/mcp`` WebSocket: messages and errors are bare JSON-RPC 2.0, not OpenEnv session messages.
    """

    __slots__ = ("rate", "burst", "max_message_size", "count", "bucket", "fragments", "mcp")

    def __init__(self, *, max_messages_per_s: float | None, message_burst: int | None, max_message_size: int,
                 count: Callable[[str], None], mcp: bool = False) -> None:
        self.rate, self.burst, self.max_message_size, self.count = (max_messages_per_s, message_burst,
                                                                    max_message_size, count)
        self.mcp = mcp
        self.bucket: TokenBucket | None = None
        self.fragments: list[bytes] | None = None

    @property
    def kind(self) -> str:
        """The session kind this connection's registry entry gets."""
        return "mcp" if self.mcp else "ws"

    # -- frames in ---------------------------------------------------------------------------------
    def frame(self, frame: Frame) -> tuple[bytes, Opcode] | Any:
        """A complete message ``(data, opcode)``, :data:`CLOSE_FRAME`, or None (a fragment, a control frame)."""
        opcode = frame.opcode
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if frame.fin:
                return bytes(frame.data), opcode
            self.fragments = [opcode.value.to_bytes(1, "big"), bytes(frame.data)]
        elif opcode is Opcode.CONT and self.fragments is not None:
            self.fragments.append(bytes(frame.data))
            if frame.fin:
                kind, *parts = self.fragments
                self.fragments = None
                return b"".join(parts), Opcode.TEXT if kind == b"\x01" else Opcode.BINARY
        elif opcode is Opcode.CLOSE:  # websockets has queued the reply; nothing more is read
            return CLOSE_FRAME
        return None

    # -- messages in, actions out ------------------------------------------------------------------
    def message(self, data: bytes, opcode: Opcode, session: Session, mcp: Any) -> list[Action]:
        """Handle one complete message on ``session``."""
        if self.mcp:
            return self._jsonrpc(data, session, mcp)
        if opcode is Opcode.TEXT:
            try:
                payload: str | bytes = data.decode()
            except UnicodeDecodeError as exc:
                return self.fail(ProtocolError(ErrorCode.SESSION_ERROR, f"text frame is not valid UTF-8 ({exc})"),
                                 1007)
        else:
            payload = data
        try:
            message = decode_client_message(payload)
            if message.type != "close":
                limited = self._over_rate()
                if limited is not None:
                    return self.error(limited)
            reply = session.handle(message, mcp)
        except ProtocolError as exc:
            return self.error(exc)
        except Exception as exc:
            log.exception("session %s: unexpected failure", session.id)
            return self.error(ProtocolError(ErrorCode.EXECUTION_ERROR, f"{type(exc).__name__}: {exc}"))
        if reply is CLOSE:
            return [Close(1000, "")]
        if isinstance(reply, str):
            return [reply]
        return [Run(reply)]

    def _jsonrpc(self, data: bytes, session: Session, mcp: Any) -> list[Action]:
        """One JSON-RPC request on the ``/mcp`` WebSocket; every failure is a JSON-RPC error and the session stays."""
        try:
            request = json.loads(data)
        except ValueError as exc:
            return [dumps(jsonrpc_error(None, JsonRpcCode.PARSE_ERROR, f"Parse error: {exc}"))]
        limited = self._over_rate()
        if limited is not None:
            request_id = request.get("id") if isinstance(request, dict) else None
            return [dumps(jsonrpc_error(request_id, JsonRpcCode.SERVER_ERROR, limited.message, limited.details))]
        try:
            reply = mcp(request, session)
        except Exception as exc:
            log.exception("session %s: MCP request failed", session.id)
            return [dumps(jsonrpc_error(_request_id(request), JsonRpcCode.INTERNAL_ERROR,
                                        f"{type(exc).__name__}: {exc}"))]
        if isinstance(reply, dict):
            return [dumps(reply)]
        return [Run(_jsonrpc_text(reply, _request_id(request)))]

    def finished(self, outcome: Any, session: Session) -> list[Action]:
        """The outcome of a :class:`Run`: its reply frame, or the exception it raised."""
        if isinstance(outcome, str):
            return [outcome]
        if isinstance(outcome, ProtocolError):
            return self.error(outcome)
        log.error("session %s: unexpected failure", session.id, exc_info=outcome)
        return self.error(ProtocolError(ErrorCode.EXECUTION_ERROR, f"{type(outcome).__name__}: {outcome}"))

    def error(self, exc: ProtocolError) -> list[Action]:
        """An error frame; a closing error also closes the session."""
        if exc.code.closes_connection:
            return self.fail(exc)
        return [encode_error(exc)]

    def fail(self, exc: ProtocolError, code: int | None = None) -> list[Action]:
        """An error frame, then close (``code``, else the error's own close code)."""
        if self.mcp:
            answer = dumps(jsonrpc_error(None, JsonRpcCode.SERVER_ERROR, exc.message, exc.details or None))
            return [answer, Close(code or CLOSE_CODES.get(exc.code, 1011), exc.code.value)]
        return [encode_error(exc), Close(code or CLOSE_CODES.get(exc.code, 1011), exc.code.value)]

    def too_big(self, detail: Exception) -> list[Action]:
        """A message over ``max_message_size``: an error frame the client can read, ahead of websockets' close."""
        limit = self.max_message_size
        self.count("max_message_size")
        return [encode_error(ProtocolError(
            ErrorCode.SESSION_ERROR,
            f"message too big: {detail}; the server's max_message_size is {limit} bytes (serve with a larger "
            "--max-message-size)",
            limit="max_message_size", value=limit,
        )), Stop()]

    def _over_rate(self) -> ProtocolError | None:
        """Take one message from the rate budget; past it, the error to answer instead (the session stays)."""
        rate = self.rate
        if rate is None:
            return None
        if self.bucket is None:
            self.bucket = TokenBucket(rate, self.burst or max(1, int(rate)))
        wait_s = self.bucket.take()
        if wait_s == 0.0:
            return None
        self.count("max_messages_per_s")
        # Not a closing error: the session and its episode stay; the client may retry after retry_after_s.
        return ProtocolError(
            ErrorCode.EXECUTION_ERROR,
            f"rate limit: this session sent more than max_messages_per_s={rate:g} (burst {self.bucket.burst}); "
            f"the message was not run; retry in {wait_s:.3f}s or serve with a larger --max-messages-per-s",
            limit="max_messages_per_s", value=rate, burst=self.bucket.burst, retry_after_s=round(wait_s, 3),
        )


def _request_id(request: Any) -> Any:
    return request.get("id") if isinstance(request, dict) else None


async def _jsonrpc_text(reply: Awaitable[Any], request_id: Any) -> str:
    """An MCP call's awaited answer as JSON text; a failure becomes a JSON-RPC error, never a closed session."""
    try:
        return dumps(await reply)
    except Exception as exc:
        log.exception("MCP request failed")
        return dumps(jsonrpc_error(request_id, JsonRpcCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
