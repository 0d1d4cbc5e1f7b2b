"""The echo env's typed client (MCP tools)."""

from __future__ import annotations

from ...client import TypedMCPClient
from ...core import State

__all__ = ["EchoEnv"]


class EchoEnv(TypedMCPClient[State], env="echo"):
    """Client of the echo env (MCP): ``await env.call_tool("echo_message", message="hi")``, or
    ``(await env.step(CallToolAction(tool_name="echo_message", arguments={...}))).observation.result["data"]``."""
