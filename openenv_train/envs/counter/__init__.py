"""The counter environment: a tiny typed env (no MCP) that measures pure server overhead."""

from ._env import CounterAction, CounterEnvironment, CounterObservation, CounterState
from .client import CounterEnv

__all__ = [
    "CounterAction",
    "CounterEnv",
    "CounterEnvironment",
    "CounterObservation",
    "CounterState",
]
