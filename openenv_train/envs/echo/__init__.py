"""The echo environment (MCP): tools that echo a message, as OpenEnv's echo_env does."""

from ._env import EchoEnvironment

__all__ = ["EchoEnvironment"]
