"""The dm_control env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import DMControlAction, DMControlObservation, DMControlState

__all__ = ["DMControlEnv"]


class DMControlEnv(TypedEnvClient[DMControlAction, DMControlObservation, DMControlState], env="dm_control"):
    """Client of the dm_control env: ``await env.step(DMControlAction(values=[0.5]))``."""
