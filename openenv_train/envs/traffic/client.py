"""The traffic env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import SumoAction, SumoObservation, SumoState

__all__ = ["SumoRLEnv"]


class SumoRLEnv(TypedEnvClient[SumoAction, SumoObservation, SumoState], env="traffic"):
    """Client of the traffic env (OpenEnv's sumo_rl_env name): ``await env.step(SumoAction(phase_id=1))``."""
