"""Environment base classes and the env server (WebSocket ``/ws`` plus the HTTP routes of OpenEnv).

An env that brings its own ASGI app (a plain FastAPI app of an OpenEnv env folder) is served as it is by
:class:`AsgiServer` (uvicorn).
"""

from ._asgi import AsgiApp, AsgiServer, is_asgi_app, run_asgi_server
from ._environment import Environment, EnvSpecInfo, RubricFailed
from ._loader import load_class
from ._mcp_environment import MCPEnvironment, ToolCallFailed, ToolSpec, result_payload, tool
from ._run import run_server
from ._server import EnvServer, ServerConfig
from ._tasks import SEED_SPLITS, TaskSplit, UnknownSplit, listed_split, seed_splits
from ._workers import serve_workers

__all__ = [
    "SEED_SPLITS",
    "AsgiApp",
    "AsgiServer",
    "EnvServer",
    "EnvSpecInfo",
    "Environment",
    "MCPEnvironment",
    "RubricFailed",
    "ServerConfig",
    "TaskSplit",
    "ToolCallFailed",
    "ToolSpec",
    "UnknownSplit",
    "is_asgi_app",
    "listed_split",
    "load_class",
    "result_payload",
    "run_asgi_server",
    "seed_splits",
    "run_server",
    "serve_workers",
    "tool",
]
