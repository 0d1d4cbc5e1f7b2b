"""Data-parallel engine processes: a large batch split among several engines that decode side by side.

One engine process decodes a small model on one torch thread (more threads do not speed up its small matmuls),
so on a machine with more cores a wide batch is cut into contiguous shards, one per engine, each engine on a core
of its own. A batch narrower than ``min_rows`` goes to the first engine whole, so small requests decode exactly
as with one engine (a row's logprobs depend, in their last bits, on the widths of the rows batched with it).
"""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ._engine_core import PrefixStats
from ._engine_process import ProcessEngine

__all__ = ["ShardedEngine"]


class ShardedEngine:
    """Several :class:`~._engine_process.ProcessEngine` over the same shared-memory model.

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
        futures = [self._pool.submit(e.start) for e in self.engines[1:]]
        first: BaseException | None = None
        try:
            self.engines[0].start()
        except BaseException as exc:  # noqa: BLE001  (the others' starts must end before it is raised)
            first = exc
        failures = [exc for exc in (first, *(f.exception() for f in futures)) if exc is not None]
        if failures:
            for engine in self.engines:
                engine.close()
            raise failures[0]

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
        shards = [rows[bounds[i]:bounds[i + 1]] for i in range(n)]
        futures = [self._pool.submit(e.run, s, version) for e, s in zip(self.engines[1:], shards[1:], strict=True)]
        failure: BaseException | None = None
        outputs: list[Any] = []
        try:
            outputs += self.engines[0].run(shards[0], version)
        except BaseException as exc:  # noqa: BLE001  (the other shards must end before the batch fails)
            failure = exc
        for future in futures:
            try:
                outputs += future.result()
            except BaseException as exc:  # noqa: BLE001
                failure = failure or exc
        if failure is not None:
            raise failure
        return outputs
