"""Shared fixtures: real env servers in this event loop or in subprocesses, and a local Ray per test module."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from openenv_train.client import Endpoint, LocalProcessProvider
from openenv_train.server import EnvServer, ServerConfig


@contextlib.asynccontextmanager
async def serve_inloop(env_cls: Any, **config: Any) -> AsyncIterator[EnvServer]:
    """An EnvServer on a free loopback port, running in the test's own event loop."""
    server = EnvServer(env_cls, ServerConfig(port=0, **config))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def serve_process(env: str, *args: str, transport: str = "tcp") -> AsyncIterator[tuple[Endpoint, LocalProcessProvider]]:
    """``openenv-train serve ENV`` in a real subprocess; yields its endpoint and provider."""
    provider = LocalProcessProvider(env, transport=transport, extra_args=list(args))
    endpoint = await provider.start()
    try:
        yield endpoint, provider
    finally:
        await provider.stop()


def ws_of(server: EnvServer) -> str:
    """The ``ws://`` session URL of an in-loop server."""
    return f"ws://127.0.0.1:{server.port}/ws"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def ray_local() -> Iterator[Any]:
    """A local Ray for each test module (so the ``ray start`` test owns the machine's Ray alone)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[default]==2.60.0')")
    from openenv_train.pool import start_private_ray
    from tests.pool import _support

    ray.cloudpickle.register_pickle_by_value(_support)  # the test policies live in a module workers cannot import
    start_private_ray(2, log_to_driver=False)  # private: a user's `ray start` or a stale cluster file is ignored
    try:
        yield ray
    finally:
        ray.shutdown()
