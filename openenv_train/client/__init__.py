"""Clients of env servers (async, ``.sync()``, generic, MCP) and the :class:`Provider` protocol.

The providers that start servers live in :mod:`openenv_train.launch`; their names stay importable from here
(``from openenv_train.client import LocalProcessProvider``), loaded on first use so that importing the client
imports neither the server nor the catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._client import ClientState, EnvClient, GenericEnvClient
from ._endpoint import Endpoint, http_get_json, wait_healthy, ws_url
from ._mcp_client import MCPToolClient, ToolCallError
from ._provider import Provider
from ._sync import SyncEnvClient
from ._typed import TypedEnvClient, TypedMCPClient

if TYPE_CHECKING:
    from ..containers import docker_available
    from ..launch import (
        DockerLimits,
        DockerProvider,
        InProcessProvider,
        LocalProcessProvider,
        RemoteProvider,
        UnixSocketProvider,
        space_url,
    )

from_env = EnvClient.from_env

_LAUNCH = frozenset({"DockerLimits", "DockerProvider", "InProcessProvider", "LocalProcessProvider", "RemoteProvider",
                     "UnixSocketProvider", "space_url"})

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
    "http_get_json",
    "wait_healthy",
    "ws_url",
    "space_url",
]


def __getattr__(name: str) -> Any:
    if name in _LAUNCH:
        from .. import launch

        return getattr(launch, name)
    if name == "docker_available":
        from ..containers import docker_available

        return docker_available
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
