"""Shared fixtures: real env servers in this event loop or in subprocesses, and a local Ray shared by the test modules."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from openenv_train.client import Endpoint
from openenv_train.launch import LocalProcessProvider
from openenv_train.server import EnvServer, ServerConfig
from tests import _system_parts


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


@pytest.fixture(scope="session")
def _shared_ray() -> Iterator[None]:
    """Shuts down, at the end of the session, the local Ray that :func:`ray_local` started (if it still runs)."""
    yield
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


@pytest.fixture(scope="module")
def ray_local(_shared_ray: None) -> Any:
    """A private local Ray (2 CPUs), started by the first module that asks and shared by the later ones.

    A cluster takes seconds to start and its workers seconds to import, so one serves the whole session;
    modules that need the machine's Ray to themselves (a ``ray start`` test) use :func:`no_shared_ray` and run
    last (:func:`pytest_collection_modifyitems`), so one is started once per session.
    """
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[default]==2.60.0')")
    from openenv_train.pool import start_private_ray
    from tests.pool import _support

    ray.cloudpickle.register_pickle_by_value(_support)  # the test policies live in a module workers cannot import
    if not ray.is_initialized():
        start_private_ray(2, log_to_driver=False)  # private: a user's `ray start` or a stale cluster file is ignored
    return ray


@pytest.fixture(scope="module")
def no_shared_ray() -> None:
    """Stops the shared local Ray, for a module whose ``ray start`` tests own the machine's Ray alone."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules that stop the shared local Ray (:func:`no_shared_ray`) run last, in their collected order: in
    between they made each next module that asks for :func:`ray_local` start a new one (seconds each time)."""
    items.sort(key=lambda item: "no_shared_ray" in getattr(item, "fixturenames", ()))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    """A failure that a missing system part caused (bubblewrap, Chromium, Docker) is a skip with its install
    line, unless CI's switch requires the part (``tests/_system_parts.py``): new tests need not remember it."""
    report: pytest.TestReport = yield
    if report.failed and call.excinfo is not None and not isinstance(call.excinfo.value, pytest.fail.Exception):
        reason = _system_parts.skip_reason(report.longreprtext)
        if reason is not None:
            report.outcome = "skipped"
            report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {reason}")
    return report
