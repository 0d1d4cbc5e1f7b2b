"""Error codes of the wire protocol and the exception tree of the project.

::

    OpenEnvTrainError
    ├── ProtocolError            a message broke the wire protocol (carries an ErrorCode)
    ├── ServerError              the server answered ``{"type": "error"}`` (code, message, details)
    │   ├── CapacityError        CAPACITY_REACHED
    │   └── FactoryError         FACTORY_ERROR
    ├── ClientError              a failure on our side of the connection
    │   ├── ConnectTimeout       no connection within connect_timeout_s
    │   ├── ReplyTimeout         no reply within reply_timeout_s; the session is failed
    │   ├── ConnectionLost       the server closed or dropped the connection
    │   └── SessionFailed        a call on a session that failed earlier
    ├── EnvLoadError             an env name or ``module:Class`` path does not resolve
    └── ServerStartError         a server could not start (port in use, bad config, no health)

Each package's errors hang under the same root (``TraceError``, ``SandboxError``, ``PolicyError``, ``PoolError``,
``HarborError``, ``JudgeError``, and single classes such as ``ToolCallFailed`` or ``ChatTransportError``); one that
is also a built-in kind keeps it as a second base (``BadRequest(OpenEnvTrainError, ValueError)``), so existing
``except ValueError`` still works. ``tests/test_errors.py`` checks every exception class of the package.
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = [
    "CapacityError",
    "ClientError",
    "ConnectTimeout",
    "ConnectionLost",
    "EnvLoadError",
    "ErrorCode",
    "FactoryError",
    "OpenEnvTrainError",
    "ProtocolError",
    "ReplyTimeout",
    "ServerError",
    "ServerStartError",
    "SessionFailed",
]


class ErrorCode(enum.StrEnum):
    """Codes of ``{"type": "error"}`` frames; CLOSING ones end the connection."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"

    @property
    def closes_connection(self) -> bool:
        """Whether the server closes the session after sending this code."""
        return self in _CLOSING

    def __str__(self) -> str:
        return self.value


_CLOSING = frozenset({ErrorCode.CAPACITY_REACHED, ErrorCode.FACTORY_ERROR, ErrorCode.SESSION_ERROR})


class OpenEnvTrainError(Exception):
    """Root of every error this project raises on purpose."""


class ProtocolError(OpenEnvTrainError):
    """A message broke the protocol; ``code`` says which rule, ``details`` holds extra fields."""

    def __init__(self, code: ErrorCode, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def to_wire(self) -> dict[str, Any]:
        """The ``data`` of the error frame that reports this error."""
        return {"message": self.message, "code": self.code.value, **self.details}


class ServerError(OpenEnvTrainError):
    """The server replied with an error frame."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        self.code = code
        self.message = message
        self.details = details or {}
        super().__init__(f"server error {code}: {message}")

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> ServerError:
        """Build the most specific error class for an error frame's ``data``."""
        code = str(data.get("code", "UNKNOWN"))
        message = str(data.get("message", "no message"))
        details = {k: v for k, v in data.items() if k not in ("code", "message")}
        klass = {"CAPACITY_REACHED": CapacityError, "FACTORY_ERROR": FactoryError}.get(code, ServerError)
        return klass(code, message, details)


class CapacityError(ServerError):
    """The server holds its maximum number of sessions."""

    def __str__(self) -> str:
        active = self.details.get("active_sessions")
        cap = self.details.get("max_sessions")
        return (
            f"server at capacity ({active}/{cap} sessions): {self.message}; close other sessions or "
            "start the server with a larger --max-sessions"
        )


class FactoryError(ServerError):
    """The server could not build the environment for a new session."""


class ClientError(OpenEnvTrainError):
    """A failure on the client's side of a connection."""


class ConnectTimeout(ClientError):
    """No connection could be opened within the connect timeout."""


class ReplyTimeout(ClientError):
    """No reply arrived within the reply timeout; the session was failed so no late reply is mis-paired."""


class ConnectionLost(ClientError):
    """The server closed or dropped the connection; the episode's state is gone."""


class SessionFailed(ClientError):
    """A call was made on a session that failed earlier and was not reconnected."""


class EnvLoadError(OpenEnvTrainError):
    """An environment name or ``module:Class`` path could not be resolved."""


class ServerStartError(OpenEnvTrainError):
    """A server could not be started."""
