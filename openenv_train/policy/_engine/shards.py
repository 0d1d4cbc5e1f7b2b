"""Data-parallel engine processes: a large batch split among several engines that decode side by side.

One engine process decodes a small model on one torch thread (more threads do not speed up its small matmuls),
so on a machine with more cores a wide batch is cut into contiguous shards, one per engine, each engine on a core
of its own. A batch narrower than ``min_rows`` goes to the first engine whole, so small requests decode exactly
as with one engine (a row's logprobs depend, in their last bits, on the widths of the rows batched with it).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .core import PrefixStats
from .process import ProcessEngine

__all__ = ["ShardedEngine"]


class ShardedEngine:
    """Several :class:`~.process.ProcessEngine` over the same shared-memory model.

    Args:
        engines: The engines (started or not); the first also takes every batch narrower than ``min_rows``.
        min_rows: The narrowest batch that is split.
    """

    kind = "process"

    def __init__(self, engines: list[ProcessEngine], min_rows: int) -> None:
        if len(engines) < 2 or min_rows < 2:
            raise ValueError("a sharded engine needs at least 2 engines and min_rows >= 2")
        self.engines, self.min_rows = engines, min_rows
        self._pool = ThreadPoolExecutor(len(engines) - 1, thread_name_prefix="engine-shard")
        self.batches_split = 0
        """Batches that were split among the engines."""

    @property
    def pid(self) -> int | None:
        """The first engine's process id (the one every small batch goes to)."""
        return self.engines[0].pid

    @property
    def pids(self) -> list[int | None]:
        """Every engine's process id."""
        return [e.pid for e in self.engines]

    @property
    def threads(self) -> int:
        """torch threads of each engine."""
        return self.engines[0].threads

    @property
    def starts(self) -> int:
        """Engines started so far, all shards together."""
        return sum(e.starts for e in self.engines)

    @property
    def decoding(self) -> threading.Event:
        """The first engine's decoding flag (set while it decodes a batch or a shard)."""
        return self.engines[0].decoding

    @property
    def prefix_cache(self) -> PrefixStats | None:
        """The engines' prefix cache counters, summed."""
        stats = [e.prefix_cache for e in self.engines if e.prefix_cache is not None]
        if not stats:
            return None
        return PrefixStats(**{f.name: sum(getattr(s, f.name) for s in stats) for f in dataclasses.fields(PrefixStats)})

    def start(self) -> None:
        """Start every engine (their starts overlap: each is its own process); if one cannot start, none is left
        running."""
        try:
            self._side_by_side([engine.start for engine in self.engines])
        except BaseException:
            for engine in self.engines:
                engine.close()
            raise

    def close(self) -> None:
        """Stop every engine."""
        for engine in self.engines:
            engine.close()
        self._pool.shutdown(wait=False)

    def sync_weights(self) -> None:
        """Restart every engine over the model's tensors as they are now."""
        for engine in self.engines:
            engine.sync_weights()

    def run(self, rows: list[Any], version: Any = None) -> list[Any]:
        """Decode a batch: whole in the first engine if narrow, else in contiguous shards side by side.

        Raises:
            EngineUnavailable: an engine died while it held its shard (the whole batch fails; it was restarted).
        """
        if len(rows) < self.min_rows:
            return self.engines[0].run(rows, version)
        self.batches_split += 1
        n = len(self.engines)
        bounds = [len(rows) * i // n for i in range(n + 1)]
        parts = self._side_by_side([functools.partial(engine.run, rows[bounds[i]:bounds[i + 1]], version)
                                    for i, engine in enumerate(self.engines)])
        return [out for part in parts for out in part]

    def _side_by_side(self, calls: list[Callable[[], Any]]) -> list[Any]:
        """The results of ``calls``, the first made in this thread and the others in the pool, in order; every call
        ends before the first failure is raised."""
        futures = [self._pool.submit(call) for call in calls[1:]]
        results: list[Any] = []
        failure: BaseException | None = None
        try:
            results.append(calls[0]())
        except BaseException as exc:  # noqa: BLE001  (the other calls must end first)
            failure = exc
        for future in futures:
            try:
                results.append(future.result())
            except BaseException as exc:  # noqa: BLE001
                failure = failure or exc
        if failure is not None:
            raise failure
        return results
