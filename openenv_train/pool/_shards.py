"""``PoolConfig(write="actors")``: actors write their rows as Parquet shards; the driver merges one manifest.

Actor side (:class:`ActorShards`): each actor incarnation writes to its own staging folder,
``<run_dir>/staging/<incarnation>/``, through a TraceWriter of its own, and flushes a shard every
``flush_rows`` rows or when the driver asks. Only a small outcome (no steps) goes back to the driver.

Driver side (:class:`ShardLedger`): an episode settled by an actor waits in the ledger until a shard holding
its row is reported; the driver then moves that shard into the run's ``traces/`` folder with
:meth:`TraceWriter.add_shard`, keeping only the rows of accepted attempts (a superseded attempt's row is
dropped there), so every episode is in the manifest once. When an actor dies (or comes back as a new
incarnation), its buffered rows are lost: the episodes waiting on it are handed back to be played again.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        self.writer = TraceWriter(self.folder, flush_rows=2**31, flush_seconds=1e12, resume=False)
        self._ids: list[list[str]] = []

    def add(self, row: TraceRow) -> None:
        self.writer.write(row)
        self._ids.append([row.trace_id, row.run_id, row.episode_id or ""])

    def due(self) -> bool:
        return len(self._ids) >= self.flush_rows

    def flush(self) -> dict[str, Any] | None:
        """Write the buffered rows as one shard; its path and row ids, or None when nothing is buffered."""
        path = self.writer.flush()
        if path is None:
            return None
        entry, self._ids = {"file": str(path), "ids": self._ids}, []
        return entry

    def close(self) -> None:
        self.writer.close()


@dataclass
class _Waiting:
    jobs: dict[str, tuple[Any, TraceRow]] = field(default_factory=dict)
    """By trace id: the job and the (stepless) row of an accepted attempt whose shard is not merged yet."""


class ShardLedger:
    """The driver's view of rows that actors hold: accepted, not yet merged into the run's manifest."""

    def __init__(self, writer: TraceWriter) -> None:
        self.writer = writer
        self.incarnations: dict[int, str] = {}
        self._waiting: dict[int, _Waiting] = {}

    @property
    def waiting(self) -> int:
        """Accepted episodes whose rows are still buffered by actors."""
        return sum(len(w.jobs) for w in self._waiting.values())

    def actors_waiting(self) -> list[int]:
        return [actor for actor, w in self._waiting.items() if w.jobs]

    def seen(self, actor: int, incarnation: str) -> list[tuple[Any, TraceRow]]:
        """An answer came from ``incarnation`` of ``actor``; the jobs an earlier incarnation lost with its buffer."""
        lost: list[tuple[Any, TraceRow]] = []
        if self.incarnations.get(actor, incarnation) != incarnation:
            lost = self.lost(actor)
        self.incarnations[actor] = incarnation
        return lost

    def accept(self, actor: int, trace_id: str, job: Any, row: TraceRow) -> None:
        self._waiting.setdefault(actor, _Waiting()).jobs[trace_id] = (job, row)

    def merge(self, actor: int, entry: dict[str, Any]) -> list[TraceRow]:
        """Move a reported shard into the run (accepted rows only); the rows now written."""
        waiting = self._waiting.setdefault(actor, _Waiting()).jobs
        ids = {trace_id for trace_id, _, _ in entry["ids"]}
        self.writer.add_shard(entry["file"], keep=lambda trace_id: trace_id in waiting)
        return [waiting.pop(trace_id)[1] for trace_id in ids if trace_id in waiting]

    def lost(self, actor: int) -> list[tuple[Any, TraceRow]]:
        """The jobs (and rows) whose rows ``actor`` held when it died (to be played again)."""
        waiting = self._waiting.pop(actor, None)
        return list(waiting.jobs.values()) if waiting else []

    def close(self) -> None:
        """Remove the staging folders (what is left there belongs to no accepted episode)."""
        shutil.rmtree(self.writer.run_dir / STAGING_DIR, ignore_errors=True)
