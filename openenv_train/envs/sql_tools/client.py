"""The sql_tools env's typed client (MCP tools)."""

from __future__ import annotations

from typing import ClassVar

from ...client import TypedMCPClient
from ._models import SQLQuestionObservation, SQLToolsState

__all__ = ["SQLToolsEnv"]


class SQLToolsEnv(TypedMCPClient[SQLToolsState], env="sql_tools"):
    """Client of the sql_tools env (MCP): reset gives a ``SQLQuestionObservation``, tools answer it."""

    observation_type: ClassVar[type] = SQLQuestionObservation
