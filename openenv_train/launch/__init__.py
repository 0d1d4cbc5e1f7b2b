"""Providers that start (or find) env servers: in-process, subprocess, Docker, remote URLs, Unix sockets.

Each implements the :class:`Provider` protocol defined here and returns an :class:`Endpoint`; the client takes
any of them (``EnvClient(provider=...)``) and its factories (``EnvClient.from_env``, ``from_docker_image``,
``from_url``) start them. This package sits above the server, the sandbox and the containers and below the
client and the catalog: the catalog lends it its env lookup (:func:`openenv_train.core.register_catalog`) and the client
its generic client class when they are imported. Exit hooks that stop what a provider started are registered when the
first server or container starts, not at import.
"""

from ._bindings import register_default_client, resolve_env
from ._docker import DockerLimits, DockerProvider, reap_orphans
from ._endpoint import Endpoint, http_get_json, wait_healthy, ws_url
from ._provider import Provider
from ._providers import InProcessProvider, LocalProcessProvider, RemoteProvider, UnixSocketProvider, space_url

__all__ = [
    "DockerLimits",
    "DockerProvider",
    "Endpoint",
    "InProcessProvider",
    "LocalProcessProvider",
    "Provider",
    "RemoteProvider",
    "UnixSocketProvider",
    "http_get_json",
    "reap_orphans",
    "register_default_client",
    "resolve_env",
    "space_url",
    "wait_healthy",
    "ws_url",
]
