"""The coding env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import CodingAction, CodingObservation, CodingState

__all__ = ["CodingEnv"]


class CodingEnv(TypedEnvClient[CodingAction, CodingObservation, CodingState], env="coding"):
    """Client of the coding env: ``await env.step(CodingAction(code=..., submit=True))``."""
