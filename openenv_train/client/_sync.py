"""SyncEnvClient: the async client run on a background event loop, for blocking code."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from ..loops import LoopThread

if TYPE_CHECKING:  # types only: _client imports this module to build the wrapper
    from ._client import EnvClient

__all__ = ["SyncEnvClient"]

T = TypeVar("T")


class SyncEnvClient:
    """Blocking twin of an :class:`EnvClient`: every coroutine method becomes a plain call.

    Example:
        >>> import openenv_train.envs  # the catalog: in-process servers find "counter" through it
        >>> from openenv_train.client import GenericEnvClient
        >>> from openenv_train.launch import InProcessProvider
        >>> with GenericEnvClient(provider=InProcessProvider("counter")).sync() as env:
        ...     env.reset(target=1).observation["target"]
        1
    """

    def __init__(self, client: EnvClient[Any, Any, Any]) -> None:
        if client._ws is not None:
            raise RuntimeError("call .sync() before connecting: a connected client belongs to its event loop")
        self._client = client

    @property
    def client(self) -> EnvClient[Any, Any, Any]:
        """The wrapped async client."""
        return self._client

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run a coroutine on the background loop and wait for its result."""
        loop = LoopThread.loop()
        if _running_loop() is loop:
            raise RuntimeError("a SyncEnvClient cannot be called from its own event loop; use the async client")
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout_s)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if inspect.iscoroutinefunction(attr):

            @functools.wraps(attr)
            def call(*args: Any, **kwargs: Any) -> Any:
                return self.run(attr(*args, **kwargs))

            return call
        return attr

    def connect(self) -> SyncEnvClient:
        """Open the session."""
        self.run(self._client.connect())
        return self

    def __enter__(self) -> SyncEnvClient:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.run(self._client.close())


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
