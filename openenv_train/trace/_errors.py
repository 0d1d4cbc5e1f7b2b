"""Errors of capture, trace writing/reading and exports.

::

    OpenEnvTrainError
    └── TraceError
        ├── CaptureError                 a capture session was misused
        │   ├── UnknownCaptureSession    no open session has that id (endpoint: 401/404)
        │   └── CaptureSessionExists     open_session() on an id already open
        ├── TraceWriteError              the writer refused a row or could not write a shard
        │   └── RunDirLocked             another live writer holds the run directory
        ├── TraceReadError               a shard or manifest cannot be read or is from a newer version
        └── HubPushError                 no token, offline, or the Hub refused the push

Trace errors are no longer ``HarborError``s (they were while traces lived in ``harbor``): catch ``TraceError``
or the root ``OpenEnvTrainError``.
"""

from __future__ import annotations

from typing import Any

from ..core import OpenEnvTrainError

__all__ = [
    "CaptureError",
    "CaptureSessionExists",
    "HubPushError",
    "RunDirLocked",
    "TraceError",
    "TraceReadError",
    "TraceWriteError",
    "UnknownCaptureSession",
    "mask_secret",
]


def mask_secret(value: str) -> str:
    """A capture session id may be an API key: show only its first 4 characters."""
    return f"{value[:4]}…({len(value)} chars)" if len(value) > 4 else "…"


class TraceError(OpenEnvTrainError):
    """Root of the errors of ``openenv_train.trace``: capture, writing, reading, exports."""


class CaptureError(TraceError):
    """A capture session was used in a way the store does not allow."""


class UnknownCaptureSession(CaptureError, KeyError):
    """No open capture session has this id (never opened, already closed, or mistyped).

    The id is masked in the message: it may be an API key.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"no open capture session {mask_secret(session_id)}: open it with CaptureStore.open_session() "
            "before the policy is called, and close it only after the episode's last model call"
        )
        self.session_id = session_id

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])

    def __reduce__(self) -> tuple[type, tuple[str]]:  # pickles (e.g. across Ray) with its real argument
        return (type(self), (self.session_id,))


class CaptureSessionExists(CaptureError):
    """``open_session()`` was called with an id that is already open."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"capture session {mask_secret(session_id)} is already open; close it first or use a fresh id per episode"
        )
        self.session_id = session_id

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (type(self), (self.session_id,))


class TraceWriteError(TraceError):
    """The trace writer refused a row (duplicate, closed writer) or could not write a shard."""


class RunDirLocked(TraceWriteError):
    """Another live process writes traces to this run directory (one writer per run directory)."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} is locked by another TraceWriter; use one writer per run directory "
            "(give each process its own run_dir, or funnel rows to one writer)"
        )
        self.path = path

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (type(self), (self.path,))


class TraceReadError(TraceError):
    """Traces could not be read: a broken manifest, or rows written by a newer schema version."""


class HubPushError(TraceError):
    """Traces could not be pushed to the Hugging Face Hub; ``reason`` is ``"no_token"``, ``"offline"`` or ``"hub"``."""

    def __init__(self, message: str, *, reason: str, rows: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.rows = rows

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_hub_error, (str(self), self.reason, self.rows))


def _rebuild_hub_error(message: str, reason: str, rows: int) -> HubPushError:
    return HubPushError(message, reason=reason, rows=rows)
