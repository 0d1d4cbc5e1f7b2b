"""EchoEnvironment: OpenEnv's reference MCP env, used by tests and benchmarks."""

from __future__ import annotations

from typing import Any

from ...server import MCPEnvironment, tool


class EchoEnvironment(MCPEnvironment):
    """Echoes messages back through MCP tools; never ends, pays no reward.

    Example:
        >>> from openenv_train.core import CallToolAction
        >>> env = EchoEnvironment()
        >>> env.reset().reward
        0.0
        >>> env.step(CallToolAction(tool_name="echo_with_length", arguments={"message": "hi"})).result["data"]
        {'message': 'hi', 'length': 2}
    """

    name = "echo"

    @tool
    def echo_message(self, message: str) -> str:
        """Return the message unchanged."""
        return message

    @tool
    def echo_with_length(self, message: str) -> dict[str, Any]:
        """Return the message and its length in characters."""
        return {"message": message, "length": len(message)}
