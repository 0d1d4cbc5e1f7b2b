"""The repl env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import ReplAction, ReplObservation, ReplState

__all__ = ["ReplEnv"]


class ReplEnv(TypedEnvClient[ReplAction, ReplObservation, ReplState], env="repl"):
    """Client of the repl env: ``await env.step(ReplAction(code="FINAL(42)"))``."""
