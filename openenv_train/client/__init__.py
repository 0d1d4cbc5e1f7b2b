"""Clients of env servers (async, ``.sync()``, generic, MCP) and the :class:`Provider` protocol they take.

The providers live in :mod:`openenv_train.launch` (below the client: ``EnvClient.from_env``,
``from_docker_image`` and ``from_url`` start them). Their names still import from here for one release, with an
:class:`~openenv_train.core.OpenEnvTrainDeprecationWarning` (``from openenv_train.launch import
LocalProcessProvider`` is the place now); so does ``docker_available``, from :mod:`openenv_train.containers`.
"""

from __future__ import annotations

from ..core import lazy_attributes, moved_names
from ..launch import Endpoint, Provider, http_get_json, register_default_client, wait_healthy, ws_url
from ._auto import TRUST_REMOTE_CODE_ENV, AutoAction, AutoEnv, RemoteCodeRefused, import_folder_package
from ._client import ClientState, EnvClient, GenericEnvClient
from ._mcp_client import MCPToolClient, ToolCallError
from ._mcp_http import McpHttpError, post_mcp
from ._mcp_ws import McpWsClient, McpWsError, mcp_ws_url
from ._server_mode import server_mode
from ._sync import SyncEnvClient
from ._tasks import TaskApiError, TaskClient, TasksNotSupported
from ._typed import TypedEnvClient, TypedMCPClient

from_env = EnvClient.from_env

register_default_client(GenericEnvClient)  # DockerProvider.client() connects one when given no class

__getattr__, __dir__ = lazy_attributes(__name__, moved={
    **moved_names(["DockerLimits", "DockerProvider", "InProcessProvider", "LocalProcessProvider", "RemoteProvider",
                   "UnixSocketProvider", "space_url"], "openenv_train.launch"),
    "docker_available": "openenv_train.containers",
})

__all__ = [
    "TRUST_REMOTE_CODE_ENV",
    "AutoAction",
    "AutoEnv",
    "ClientState",
    "Endpoint",
    "EnvClient",
    "GenericEnvClient",
    "MCPToolClient",
    "McpHttpError",
    "McpWsClient",
    "McpWsError",
    "Provider",
    "RemoteCodeRefused",
    "SyncEnvClient",
    "TaskApiError",
    "TaskClient",
    "TasksNotSupported",
    "ToolCallError",
    "TypedEnvClient",
    "TypedMCPClient",
    "from_env",
    "http_get_json",
    "import_folder_package",
    "mcp_ws_url",
    "post_mcp",
    "server_mode",
    "wait_healthy",
    "ws_url",
]
