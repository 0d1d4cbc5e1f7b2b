"""The counter env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._env import CounterAction, CounterObservation, CounterState

__all__ = ["CounterEnv"]


class CounterEnv(TypedEnvClient[CounterAction, CounterObservation, CounterState], env="counter"):
    """Client of the counter env: ``await env.step(CounterAction(delta=2))``."""
