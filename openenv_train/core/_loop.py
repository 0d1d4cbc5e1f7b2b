"""One background event loop per process, for sync code that drives async clients and servers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread", "run_on_loop"]

T = TypeVar("T")


class LoopThread:
    """One event loop in a daemon thread, shared by the sync clients of this process."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def loop(cls) -> asyncio.AbstractEventLoop:
        """The shared loop, started on first use (and again if it was closed)."""
        with cls._lock:
            if cls._loop is None or cls._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="openenv-train-sync", daemon=True).start()
                cls._loop = loop
            return cls._loop


def run_on_loop(coro: Coroutine[Any, Any, T], timeout_s: float | None) -> T:
    """Run ``coro`` on the shared background loop and wait up to ``timeout_s`` seconds for its result."""
    return asyncio.run_coroutine_threadsafe(coro, LoopThread.loop()).result(timeout_s)
