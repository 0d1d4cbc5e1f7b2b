"""``PoolConfig(write="actors")``: actors write their rows as Parquet shards; the driver merges one manifest.

Actor side (:class:`ActorShards`): each actor incarnation writes to its own staging folder,
``<run_dir>/staging/<incarnation>/``, through a TraceWriter of its own, and flushes a shard every
``flush_rows`` rows or when the driver asks. Only a small outcome (no steps) goes back to the driver.

Driver side (:class:`ShardLedger`): an episode settled by an actor waits in the ledger until a shard holding
its row is reported; the driver then moves that shard into the run's ``traces/`` folder with
:meth:`TraceWriter.add_shard`, keeping only the rows of accepted attempts (a superseded attempt's row is
dropped there), so every episode is in the manifest once, and a row is handed to the caller only once the
run's writer holds it. When an incarnation of an actor dies, its buffered rows are lost: the episodes waiting
on it are handed back to be played again.

An actor may hold two attempts of one episode (the first superseded: replayed after a call failed, rerun as
stale, or past the pool's deadline), so its staging writer keys rows by trace id alone; the driver's
``keep`` picks the accepted attempt.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any, Literal

from ..core import fault_point
from ..trace import TraceRow, TraceWriter

__all__ = ["STAGING_DIR", "ActorShards", "ShardLedger"]

STAGING_DIR = "staging"


class ActorShards:
    """An actor's buffer of finished rows, flushed as shards into its staging folder."""

    def __init__(self, run_dir: str, flush_rows: int) -> None:
        self.incarnation = uuid.uuid4().hex[:12]
        self.flush_rows = flush_rows
        self.folder = Path(run_dir) / STAGING_DIR / self.incarnation
        # The actor decides when to flush (never the writer by itself): each flush is reported to the driver.
        self.writer = TraceWriter(self.folder, flush_rows=2**31, flush_seconds=1e12, resume=False, unique_by="trace")
        self._ids: list[list[str]] = []

    def add(self, row: TraceRow) -> None:
        if not self.writer.write(row):  # a reported id must name a row in the shard: never report a skipped one
            raise RuntimeError(f"trace {row.trace_id} was already buffered by this actor")
        self._ids.append([row.trace_id, row.run_id, row.episode_id or ""])
        fault_point("pool.actor.buffered")

    def due(self) -> bool:
        return len(self._ids) >= self.flush_rows

    def flush(self) -> dict[str, Any] | None:
        """Write the buffered rows as one shard; its path and row ids, or None when nothing is buffered."""
        path = self.writer.flush()
        if path is None:
            return None
        entry, self._ids = {"file": str(path), "ids": self._ids}, []
        fault_point("pool.actor.flushed")
        return entry

    def close(self) -> None:
        self.writer.close()


class ShardLedger:
    """The driver's view of rows that actors hold: accepted, not yet merged into the run's manifest.

    The rows waiting on an actor are all buffered by the incarnation of it that answered last: an answer from
    another incarnation means the earlier one died, and what it held is handed back (:meth:`seen`).
    """

    def __init__(self, writer: TraceWriter) -> None:
        self.writer = writer
        self.incarnations: dict[int, str | None] = {}
        self._waiting: dict[int, dict[str, tuple[Any, TraceRow]]] = {}

    @property
    def waiting(self) -> int:
        """Accepted episodes whose rows are still buffered by actors."""
        return sum(len(jobs) for jobs in self._waiting.values())

    def actors_waiting(self) -> list[int]:
        return [actor for actor, jobs in self._waiting.items() if jobs]

    def seen(self, actor: int, incarnation: str | None) -> list[tuple[Any, TraceRow]]:
        """An answer came from ``incarnation`` of ``actor`` (None: one that has buffered nothing); the jobs an
        earlier incarnation lost with its buffer."""
        lost = self.lost(actor) if self.incarnations.get(actor) != incarnation else []
        self.incarnations[actor] = incarnation
        return lost

    def accept(self, actor: int, trace_id: str, job: Any, row: TraceRow) -> None:
        """An attempt's row, buffered by the incarnation of ``actor`` that answered last (:meth:`seen`)."""
        self._waiting.setdefault(actor, {})[trace_id] = (job, row)

    def merge(self, actor: int, entry: dict[str, Any]) -> tuple[list[TraceRow], list[tuple[Any, TraceRow]]]:
        """Move a reported shard into the run (accepted rows only): the rows now written, and the jobs whose
        rows the shard was said to hold and does not (to be played again, never reported as written)."""
        waiting = self._waiting.setdefault(actor, {})
        self.writer.add_shard(entry["file"], keep=lambda trace_id: trace_id in waiting)
        written: list[TraceRow] = []
        missing: list[tuple[Any, TraceRow]] = []
        for trace_id in [t for t, _, _ in entry["ids"] if t in waiting]:
            job, row = waiting.pop(trace_id)
            if self.writer.written(trace_id):
                written.append(row)
            else:
                missing.append((job, row))
        return written, missing

    def lost(self, actor: int, incarnation: str | None | Literal["any"] = "any") -> list[tuple[Any, TraceRow]]:
        """The jobs (and rows) that died with ``actor``. Given the ``incarnation`` known when a failed call was
        sent: none if another incarnation has answered since (the rows waiting are that live one's)."""
        if incarnation != "any" and self.incarnations.get(actor) != incarnation:
            return []
        return list(self._waiting.pop(actor, {}).values())

    def close(self) -> None:
        """Remove the staging folders (what is left there belongs to no accepted episode)."""
        shutil.rmtree(self.writer.run_dir / STAGING_DIR, ignore_errors=True)
