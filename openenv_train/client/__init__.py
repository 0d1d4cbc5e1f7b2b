"""Clients of env servers (async, ``.sync()``, generic, MCP) and providers that start servers."""

from ._client import ClientState, EnvClient, GenericEnvClient
from ._endpoint import Endpoint, ws_url
from ._mcp_client import MCPToolClient, ToolCallError
from ._providers import (
    DockerLimits,
    DockerProvider,
    InProcessProvider,
    LocalProcessProvider,
    Provider,
    RemoteProvider,
    UnixSocketProvider,
    docker_available,
    space_url,
)
from ._sync import SyncEnvClient
from ._typed import TypedEnvClient, TypedMCPClient

from_env = EnvClient.from_env

__all__ = [
    "ClientState",
    "DockerLimits",
    "DockerProvider",
    "Endpoint",
    "EnvClient",
    "GenericEnvClient",
    "InProcessProvider",
    "LocalProcessProvider",
    "MCPToolClient",
    "Provider",
    "RemoteProvider",
    "SyncEnvClient",
    "ToolCallError",
    "TypedEnvClient",
    "TypedMCPClient",
    "UnixSocketProvider",
    "docker_available",
    "from_env",
    "ws_url",
    "space_url",
]
