"""Providers that start (or find) env servers: in-process, subprocess, Docker, remote URLs, Unix sockets.

Each implements :class:`openenv_train.client.Provider`. This package sits above the server, the catalog, the
sandbox and the containers, so that the client itself imports none of them. Exit hooks that stop what a provider
started are registered when the first server or container starts, not at import.
"""

from ._docker import DockerLimits, DockerProvider, reap_orphans
from ._providers import InProcessProvider, LocalProcessProvider, RemoteProvider, UnixSocketProvider, space_url

__all__ = [
    "DockerLimits",
    "DockerProvider",
    "InProcessProvider",
    "LocalProcessProvider",
    "RemoteProvider",
    "UnixSocketProvider",
    "reap_orphans",
    "space_url",
]
