"""The terminal env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import TerminalAction, TerminalObservation, TerminalState

__all__ = ["TerminalEnv"]


class TerminalEnv(TypedEnvClient[TerminalAction, TerminalObservation, TerminalState], env="terminal"):
    """Client of the terminal env: ``await env.step(TerminalAction(keystrokes="ls\\n"))``."""
