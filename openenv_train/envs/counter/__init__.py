"""The counter environment: a tiny typed env (no MCP) that measures pure server overhead."""

from ._env import CounterAction, CounterEnvironment, CounterObservation, CounterState

__all__ = ["CounterAction", "CounterEnvironment", "CounterObservation", "CounterState"]
