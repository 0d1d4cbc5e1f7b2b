"""Background event loops in daemon threads, for sync code that drives async clients and servers.

:class:`EventLoopThread` is one loop of its own in a daemon thread (a server started from sync code, a runner);
:class:`LoopThread` is the one such loop a process shares for its sync clients.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, ClassVar, TypeVar

__all__ = ["EventLoopThread", "LoopThread", "run_on_loop"]

T = TypeVar("T")


class EventLoopThread:
    """An event loop running in a daemon thread of its own, started at construction.

    Example:
        >>> async def answer() -> int:
        ...     return 42
        >>> runner = EventLoopThread("example")
        >>> runner.run(answer(), 5.0)
        42
        >>> runner.stop()

    Args:
        name: the thread's name (shown by debuggers and ``threading.enumerate()``).
    """

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            # As asyncio.run ends: tasks still pending are cancelled and async generators finalised.
            pending = [task for task in asyncio.all_tasks(self.loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    @property
    def running(self) -> bool:
        """Whether the loop still runs (it has not been stopped)."""
        return self.loop.is_running()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; the returned future holds its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run ``coro`` on the loop and wait up to ``timeout_s`` seconds for its result (from another thread)."""
        return self.submit(coro).result(timeout_s)

    def stop(self, timeout_s: float | None = 30.0) -> None:
        """Stop the loop and wait up to ``timeout_s`` seconds for its thread to end; idempotent."""
        if not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self.loop.stop)
            except RuntimeError:  # closed between the check and the call
                pass
        if self._thread is not threading.current_thread():
            self._thread.join(timeout_s)


class LoopThread:
    """One event loop in a daemon thread, shared by the sync clients of this process."""

    _lock = threading.Lock()
    _shared: ClassVar[EventLoopThread | None] = None

    @classmethod
    def loop(cls) -> asyncio.AbstractEventLoop:
        """The shared loop, started on first use (and again if it was closed)."""
        with cls._lock:
            if cls._shared is None or cls._shared.loop.is_closed():
                cls._shared = EventLoopThread("openenv-train-sync")
            return cls._shared.loop


def run_on_loop(coro: Coroutine[Any, Any, T], timeout_s: float | None) -> T:
    """Run ``coro`` on the shared background loop and wait up to ``timeout_s`` seconds for its result."""
    return asyncio.run_coroutine_threadsafe(coro, LoopThread.loop()).result(timeout_s)
