"""The mock_apis env's typed client (MCP tools)."""

from __future__ import annotations

from typing import ClassVar

from ...client import TypedMCPClient
from ._env import MockAPIState, MockAPITaskObservation

__all__ = ["MockAPIEnv"]


class MockAPIEnv(TypedMCPClient[MockAPIState], env="mock_apis"):
    """Client of the mock_apis env (MCP): reset gives a ``MockAPITaskObservation``, tools answer it."""

    observation_type: ClassVar[type] = MockAPITaskObservation
