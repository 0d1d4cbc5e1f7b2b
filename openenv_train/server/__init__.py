"""Environment base classes and the env server (WebSocket ``/ws`` plus the HTTP routes of OpenEnv)."""

from ._environment import Environment, EnvSpecInfo
from ._loader import load_class
from ._mcp_environment import MCPEnvironment, ToolCallFailed, ToolSpec, result_payload, tool
from ._run import run_server
from ._server import EnvServer, ServerConfig
from ._workers import serve_workers

__all__ = [
    "EnvServer",
    "EnvSpecInfo",
    "Environment",
    "MCPEnvironment",
    "ServerConfig",
    "ToolCallFailed",
    "ToolSpec",
    "load_class",
    "result_payload",
    "run_server",
    "serve_workers",
    "tool",
]
