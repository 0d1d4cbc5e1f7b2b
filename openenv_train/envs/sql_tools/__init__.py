"""The sql_tools environment (MCP): answer questions about a small shop database with read-only SQL tools."""

from ._env import SQLToolsEnvironment
from ._models import SQLQuestionObservation, SQLToolsState

__all__ = ["SQLQuestionObservation", "SQLToolsEnvironment", "SQLToolsState"]
