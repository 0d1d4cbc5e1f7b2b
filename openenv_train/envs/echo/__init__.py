"""The echo environment (MCP): tools that echo a message, as OpenEnv's echo_env does."""

from ...core import CallToolAction, CallToolObservation, ListToolsAction, ListToolsObservation, State
from ._env import EchoEnvironment
from .client import EchoEnv

__all__ = [
    "CallToolAction",
    "CallToolObservation",
    "EchoEnv",
    "EchoEnvironment",
    "ListToolsAction",
    "ListToolsObservation",
    "State",
]
