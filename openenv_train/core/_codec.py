"""The message codec of the ``/ws`` protocol: text frames in, text frames out, no I/O.

Client to server: ``reset`` (data optional), ``step`` (data required), ``state``,
``mcp`` (data: a JSON-RPC request) and ``close``. Server to client:
``observation``, ``state``, ``mcp`` and ``error``. Every check raises
:class:`ProtocolError` with its code (:class:`ErrorCode`; the codes are listed in
docs/guides/serving.md, Server behaviour).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ._errors import ErrorCode, ProtocolError

__all__ = [
    "CLIENT_TYPES",
    "SERVER_TYPES",
    "ClientMessage",
    "ServerMessage",
    "decode_client_message",
    "decode_server_message",
    "dumps",
    "encode_client_message",
    "loads",
    "encode_error",
    "encode_server_message",
    "validation_errors",
]

CLIENT_TYPES = ("reset", "step", "state", "mcp", "close")
SERVER_TYPES = ("observation", "state", "mcp", "error")
_DATA_REQUIRED = frozenset({"step", "mcp"})
_ENVELOPE_KEYS = frozenset({"type", "data"})


@dataclass(frozen=True, slots=True)
class ClientMessage:
    """A decoded client request; ``data`` is ``{}`` when the frame had none."""

    type: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ServerMessage:
    """A decoded server reply."""

    type: str
    data: dict[str, Any]


def dumps(obj: Any) -> str:
    """Serialise to compact, strict JSON (NaN and infinities are refused, not sent)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _field_error(loc: list[Any], msg: str, kind: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": kind}


def validation_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic errors as plain JSON data (``loc``, ``msg``, ``type``, ``input``)."""
    errors: list[dict[str, Any]] = json.loads(exc.json(include_url=False, include_context=False))
    return errors


def _envelope(obj: Any, *, allowed: tuple[str, ...], side: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(obj, dict):
        raise ProtocolError(
            ErrorCode.VALIDATION_ERROR,
            f"message must be a JSON object like {{\"type\": ..., \"data\": {{...}}}}, got {type(obj).__name__}",
            errors=[_field_error([], "Input should be an object", "model_type")],
        )
    kind = obj.get("type")
    if kind is None:
        raise ProtocolError(
            ErrorCode.VALIDATION_ERROR,
            f"message has no 'type'; expected one of {', '.join(allowed)}",
            errors=[_field_error(["type"], "Field required", "missing")],
        )
    if not isinstance(kind, str) or kind not in allowed:
        raise ProtocolError(
            ErrorCode.UNKNOWN_TYPE,
            f"unknown {side} message type {kind!r}; expected one of {', '.join(allowed)}",
        )
    extra = sorted(set(obj) - _ENVELOPE_KEYS)
    if extra:
        raise ProtocolError(
            ErrorCode.VALIDATION_ERROR,
            f"unknown top-level key(s) {', '.join(map(repr, extra))} in {kind!r} message; "
            "only 'type' and 'data' are allowed (put action fields inside 'data')",
            errors=[_field_error([key], "Extra inputs are not permitted", "extra_forbidden") for key in extra],
        )
    data = obj.get("data")
    if data is None:
        if kind in _DATA_REQUIRED:
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR,
                f"{kind!r} message needs a 'data' object",
                errors=[_field_error(["data"], "Field required", "missing")],
            )
        data = {}
    elif not isinstance(data, dict):
        raise ProtocolError(
            ErrorCode.VALIDATION_ERROR,
            f"'data' of a {kind!r} message must be an object, got {type(data).__name__}",
            errors=[_field_error(["data"], "Input should be a valid dictionary", "dict_type")],
        )
    return kind, data


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (use null or a finite number)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e400 would parse as inf, which no JSON encoder can write back
        raise ValueError(f"number {text[:40]} is too large for a float (use a finite number)")
    return value


_STRICT_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def loads(text: str | bytes) -> Any:
    """Parse strict JSON: NaN/Infinity, numbers beyond a float's range and nesting deeper than Python's recursion
    limit raise ValueError."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode()
    try:
        return _STRICT_DECODER.decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _loads(frame: str | bytes) -> Any:
    if isinstance(frame, (bytes, bytearray, memoryview)):
        raise ProtocolError(
            ErrorCode.SESSION_ERROR,
            "binary frames are not part of the protocol; send each message as a JSON text frame",
        )
    try:
        return loads(frame)
    except ValueError as exc:
        raise ProtocolError(
            ErrorCode.INVALID_JSON, f"frame is not valid JSON ({exc}); send one JSON object per text frame"
        ) from None


def decode_client_message(frame: str | bytes) -> ClientMessage:
    """Parse and check one client frame.

    Raises:
        ProtocolError: with INVALID_JSON, UNKNOWN_TYPE, VALIDATION_ERROR or SESSION_ERROR (binary frame).
    """
    kind, data = _envelope(_loads(frame), allowed=CLIENT_TYPES, side="client")
    return ClientMessage(kind, data)


def encode_client_message(kind: str, data: dict[str, Any] | None = None) -> str:
    """Serialise one client request."""
    if kind not in CLIENT_TYPES:
        raise ValueError(f"unknown client message type {kind!r}; expected one of {', '.join(CLIENT_TYPES)}")
    return dumps({"type": kind} if data is None else {"type": kind, "data": data})


def encode_server_message(kind: str, data: dict[str, Any]) -> str:
    """Serialise one server reply (``observation``, ``state``, ``mcp`` or ``error``)."""
    return dumps({"type": kind, "data": data})


def encode_error(error: ProtocolError) -> str:
    """Serialise an error frame for ``error``; details that are not JSON are sent as their repr."""
    try:
        return encode_server_message("error", error.to_wire())
    except (TypeError, ValueError):
        return encode_server_message("error", _jsonable(error.to_wire()))


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return repr(obj)


def decode_server_message(frame: str | bytes) -> ServerMessage:
    """Parse and check one server frame (client side).

    Raises:
        ProtocolError: when the server sent something outside the protocol.
    """
    if isinstance(frame, (bytes, bytearray, memoryview)):
        raise ProtocolError(ErrorCode.SESSION_ERROR, "server sent a binary frame; the protocol uses JSON text")
    obj = _loads(frame)
    if isinstance(obj, dict):
        # Servers may add keys in later protocol versions; a client ignores them.
        obj = {k: v for k, v in obj.items() if k in _ENVELOPE_KEYS}
    kind, data = _envelope(obj, allowed=SERVER_TYPES, side="server")
    return ServerMessage(kind, data)
