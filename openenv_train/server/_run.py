"""Run an env server in the foreground until SIGTERM/SIGINT or the parent process dies."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
from typing import Any

from ._environment import Environment
from ._server import EnvServer, ServerConfig

__all__ = ["run_server"]


def _event_loop_policy() -> None:
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


async def _watch_parent(parent_pid: int, stop: asyncio.Event) -> None:
    while not stop.is_set():
        if os.getppid() != parent_pid:
            stop.set()
            return
        await asyncio.sleep(0.5)


async def _serve(env_cls: type[Environment[Any, Any, Any]], config: ServerConfig, parent_pid: int | None,
                 ready_file: str | None) -> None:
    server = EnvServer(env_cls, config)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watcher = loop.create_task(_watch_parent(parent_pid, stop)) if parent_pid else None
    # Objects made so far live as long as the server: keep the cyclic GC from rescanning them.
    gc.collect()
    gc.freeze()
    print(f"openenv-train: serving {env_cls.metadata_info().name} on {server.url} (WebSocket at /ws)",
          file=sys.stderr, flush=True)
    if config.web:
        print(f"openenv-train: playground at {server.url}/web/", file=sys.stderr, flush=True)
    if ready_file:
        tmp = f"{ready_file}.tmp"
        with open(tmp, "w") as f:
            f.write(server.url)
        os.replace(tmp, ready_file)
    try:
        await stop.wait()
    finally:
        if watcher is not None:
            watcher.cancel()
        await server.stop()


def run_server(env_cls: type[Environment[Any, Any, Any]], config: ServerConfig, *, parent_pid: int | None = None,
               ready_file: str | None = None) -> None:
    """Serve ``env_cls`` until SIGTERM/SIGINT (or until ``parent_pid`` is gone), then shut down gracefully.

    Uses uvloop when it is installed. ``ready_file`` receives the server's URL once it listens.

    Raises:
        ServerStartError: the address cannot be bound.
    """
    _event_loop_policy()
    asyncio.run(_serve(env_cls, config, parent_pid, ready_file))
