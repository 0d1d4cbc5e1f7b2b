"""The sql_tools environment (MCP): answer questions about a small shop database with read-only SQL tools."""

from ...core import CallToolAction, CallToolObservation, ListToolsAction, ListToolsObservation
from ._env import SQLToolsEnvironment
from ._models import SQLQuestionObservation, SQLToolsState
from .client import SQLToolsEnv

__all__ = [
    "CallToolAction",
    "CallToolObservation",
    "ListToolsAction",
    "ListToolsObservation",
    "SQLQuestionObservation",
    "SQLToolsEnv",
    "SQLToolsEnvironment",
    "SQLToolsState",
]
