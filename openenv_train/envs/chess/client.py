"""The chess env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import ChessAction, ChessObservation, ChessState

__all__ = ["ChessEnv"]


class ChessEnv(TypedEnvClient[ChessAction, ChessObservation, ChessState], env="chess"):
    """Client of the chess env: ``await env.step(ChessAction(move="e2e4"))``."""
