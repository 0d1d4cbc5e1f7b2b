"""Errors of the sandbox.

::

    OpenEnvTrainError
    └── SandboxError              the sandbox could not do what was asked
        ├── SandboxUnavailable    namespaces cannot be created here (bwrap missing, user namespaces off)
        └── SandboxStateError     a call in the wrong state (a run in progress, or after close())
"""

from __future__ import annotations

from ..core import OpenEnvTrainError

__all__ = ["SandboxError", "SandboxStateError", "SandboxUnavailable"]


class SandboxError(OpenEnvTrainError):
    """The sandbox failed to set up or to report on a run (not an error of the code it ran)."""


class SandboxUnavailable(SandboxError):
    """OS isolation is not possible here; ``reason`` says why and how to fix it.

    Raised instead of ever running code unsandboxed, unless the config says ``allow_unsafe=True``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"cannot isolate code: {reason}")
        self.reason = reason


class SandboxStateError(SandboxError):
    """A sandbox was used while busy with another run, or after ``close()``."""
