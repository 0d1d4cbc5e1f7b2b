"""The Atari env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import AtariAction, AtariObservation, AtariState

__all__ = ["AtariEnv"]


class AtariEnv(TypedEnvClient[AtariAction, AtariObservation, AtariState], env="atari"):
    """Client of the Atari env: ``await env.step(AtariAction(action_id=1))``."""
