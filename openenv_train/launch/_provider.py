"""The Provider protocol: what a client needs from whatever starts (or finds) its env server.

The concrete providers (in-process, subprocess, Docker, remote URLs, Unix sockets) implement it in this package;
:mod:`openenv_train.client` takes any of them (``EnvClient(provider=...)``) and re-exports the protocol.
"""

from __future__ import annotations

import abc

from ._endpoint import Endpoint

__all__ = ["Provider"]


class Provider(abc.ABC):
    """Starts a server on :meth:`start` (returning its endpoint) and stops it on :meth:`stop`."""

    started: bool = False

    @abc.abstractmethod
    async def start(self) -> Endpoint:
        """Start (or locate) the server and wait until it is healthy."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stop what :meth:`start` started; safe to call twice."""

    async def __aenter__(self) -> Endpoint:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
