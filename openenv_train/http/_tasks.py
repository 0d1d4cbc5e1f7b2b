"""The background tasks of a server: started with :meth:`TaskSet.spawn`, drained on shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

__all__ = ["TaskSet"]


class TaskSet:
    """Tasks a server runs in the background (one per request or message), kept referenced until they end.

    asyncio holds only weak references to tasks, so a task nobody keeps can be collected mid-run.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run a coroutine in the background, keeping a reference until it ends."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` seconds for the tasks still running to end (they are not cancelled)."""
        busy = [t for t in self._tasks if not t.done()]
        if busy:
            await asyncio.wait(busy, timeout=timeout_s)
