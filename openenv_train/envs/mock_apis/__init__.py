"""A BFCL-style suite of mock APIs (weather, currency, stocks, flights, messages) served as MCP tools."""

from ._apis import MockServices
from ._env import MockAPIEnvironment, MockAPIState, MockAPITaskObservation
from ._tasks import KINDS, Call, MockTask, calls_match, make_task
from .client import MockAPIEnv

__all__ = ["KINDS", "Call", "MockAPIEnv", "MockAPIEnvironment", "MockAPIState", "MockAPITaskObservation", "MockServices",
           "MockTask", "calls_match", "make_task"]
