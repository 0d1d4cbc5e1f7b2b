"""The reasoning_gym env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import ReasoningGymAction, ReasoningGymObservation, ReasoningGymState

__all__ = ["ReasoningGymEnv"]


class ReasoningGymEnv(TypedEnvClient[ReasoningGymAction, ReasoningGymObservation, ReasoningGymState],
                      env="reasoning_gym"):
    """Client of the reasoning_gym env: ``await env.step(ReasoningGymAction(answer="42"))``."""
