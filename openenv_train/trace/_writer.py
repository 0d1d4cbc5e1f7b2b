"""TraceWriter: appends TraceRows to Parquet shards under ``<run_dir>/traces/``, crash-safe and exactly-once.

Files in ``<run_dir>/traces/``:

- ``part-NNNNN-<hex>.parquet``: shards, each written to ``<name>.tmp`` in the same folder, fsynced, then
  renamed (atomic), so a ``*.parquet`` file is always complete; ``.tmp`` leftovers of a killed writer are
  ignored by the ``*.parquet`` glob and removed by the next writer.
- ``manifest.json``: ``{"format", "schema_version", "rows", "shards": [{"file", "rows", "schema_version",
  "ids": [[trace_id, run_id, episode_id], ...]}]}``, replaced atomically after each shard. A shard that made it
  to disk but not into the manifest (killed in between) is adopted by the next writer, never written again.
- ``.lock``: an advisory lock held by the one live writer of the folder.

Exactly-once: a row is a duplicate when its ``trace_id`` was written, or when it has an ``episode_id`` and
the pair ``(run_id, episode_id)`` was written (unless the writer is ``unique_by="trace"``: a staging folder that
holds several attempts of one episode, of which a driver keeps one). A resumed run asks :meth:`TraceWriter.written` before it runs
an episode (trace ids are random per attempt, so resume by ``(run_id, episode_id)``), and a duplicate
:meth:`~TraceWriter.write` is skipped (or refused with ``on_duplicate="error"``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from ..core import fault_point
from ._errors import RunDirLocked, TraceReadError, TraceWriteError
from ._rows import ROW_SCHEMA_VERSION, TraceRow
from ._schema import TRACE_SCHEMA, to_record

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["MANIFEST_NAME", "TRACES_DIR", "EpisodeKey", "TraceWriter", "episode_key"]

log = logging.getLogger(__name__)

TRACES_DIR = "traces"
MANIFEST_NAME = "manifest.json"
_SHARD = re.compile(r"^part-(\d+)-[0-9a-f]+\.parquet$")

#: A trace id, or a ``(run_id, episode_id)`` pair.
EpisodeKey = str | tuple[str, str]


def episode_key(row: TraceRow) -> EpisodeKey:
    """The key a resumed run skips by: ``(run_id, episode_id)`` when the row has an episode id, else its trace id."""
    return (row.run_id, row.episode_id) if row.episode_id else row.trace_id


def _shard_seq(name: str) -> int:
    match = _SHARD.match(name)
    return int(match.group(1)) if match else -1


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class TraceWriter:
    """Appends rows to Parquet shards; flushes every ``flush_rows`` rows, or on a write ``flush_seconds`` after
    the oldest buffered row, and on :meth:`flush`/:meth:`close`/leaving a ``with`` block.

    A kill loses at most the buffered rows, never a written shard. One writer per run directory (enforced
    with a lock file); its methods are thread-safe.

    Args:
        run_dir: the run's folder; shards go to ``<run_dir>/traces/``.
        flush_rows: write a shard once this many rows are buffered.
        flush_seconds: on a write, also flush when the oldest buffered row is this old.
        resume: continue a folder that already has shards (their rows count as written); with False such a
            folder is refused.
        on_duplicate: ``"skip"`` (``write`` returns False) or ``"error"`` (raises TraceWriteError).
        unique_by: ``"episode"``: a second row of a ``(run_id, episode_id)`` is a duplicate; ``"trace"``: only a
            repeated trace id is (a pool actor's staging writer, which may hold two attempts of one episode).
        compression: Parquet codec of the shards.
        clock: the time source of ``flush_seconds`` (monotonic; tests pass a fake one).

    An idle writer does not flush on its own: call :meth:`flush` (or :meth:`close`) when a run pauses.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        flush_rows: int = 256,
        flush_seconds: float = 30.0,
        resume: bool = True,
        on_duplicate: Literal["skip", "error"] = "skip",
        unique_by: Literal["episode", "trace"] = "episode",
        compression: str = "zstd",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if flush_rows < 1 or flush_seconds <= 0:
            raise ValueError(f"flush_rows must be >= 1 and flush_seconds > 0, got {flush_rows} and {flush_seconds}")
        self.run_dir = Path(run_dir)
        self.dir = self.run_dir / TRACES_DIR
        self.flush_rows, self.flush_seconds = flush_rows, flush_seconds
        self.on_duplicate, self.compression, self._clock = on_duplicate, compression, clock
        self._by_episode = unique_by == "episode"
        self._lock = threading.RLock()
        self._pending: list[dict[str, Any]] = []
        self._oldest: float | None = None
        self._shards: list[dict[str, Any]] = []
        self._trace_ids: set[str] = set()
        self._episodes: set[tuple[str, str]] = set()
        self._closed = False
        try:  # the lock file doubles as the check that the folder is writable, before any work is done
            self.dir.mkdir(parents=True, exist_ok=True)
            self._lock_file = self._acquire_lock()
        except OSError as exc:
            raise TraceWriteError(
                f"cannot write traces to {self.dir}: {exc.strerror or exc}; make the folder writable (and check it "
                "is not on a read-only or full filesystem) or pass another run_dir"
            ) from exc
        try:
            self._load(resume)
        except BaseException:
            self._release_lock()
            raise

    # -- public API -------------------------------------------------------------------------------------

    @property
    def rows_written(self) -> int:
        """Rows in shards on disk (not counting buffered rows)."""
        return sum(s["rows"] for s in self._shards)

    @property
    def pending(self) -> int:
        """Rows buffered, not yet in a shard."""
        return len(self._pending)

    @property
    def shards(self) -> list[Path]:
        """Paths of the shards on disk, oldest first."""
        return [self.dir / s["file"] for s in self._shards]

    @property
    def closed(self) -> bool:
        return self._closed

    def written(self, key: TraceRow | EpisodeKey) -> bool:
        """Whether a row with this key is written or buffered: a TraceRow, a trace id, or ``(run_id, episode_id)``."""
        with self._lock:
            if isinstance(key, TraceRow):
                return key.trace_id in self._trace_ids or (
                    bool(key.episode_id) and (key.run_id, key.episode_id) in self._episodes
                )
            if isinstance(key, tuple):
                return key in self._episodes
            return key in self._trace_ids

    def write(self, row: TraceRow) -> bool:
        """Buffer one row (flushing when a threshold is reached); False when skipped as a duplicate.

        Raises:
            TraceWriteError: the writer is closed, the row is a duplicate with ``on_duplicate="error"``,
                or it cannot be serialized.
        """
        with self._lock:
            self._check_open()
            if self.written(row if self._by_episode else row.trace_id):
                if self.on_duplicate == "error":
                    raise TraceWriteError(
                        f"episode {episode_key(row)!r} (trace {row.trace_id}) is already written to {self.dir}"
                    )
                return False
            try:
                record = to_record(row)
            except (TypeError, ValueError) as exc:
                raise TraceWriteError(f"trace {row.trace_id} cannot be serialized: {exc}") from exc
            self._pending.append(record)
            self._trace_ids.add(row.trace_id)
            if row.episode_id:
                self._episodes.add((row.run_id, row.episode_id))
            if self._oldest is None:
                self._oldest = self._clock()
            if len(self._pending) >= self.flush_rows or self._clock() - self._oldest >= self.flush_seconds:
                self.flush()
            return True

    def write_many(self, rows: Iterable[TraceRow]) -> int:
        """Write several rows; returns how many were accepted (not skipped)."""
        return sum(self.write(row) for row in rows)

    def flush(self) -> Path | None:
        """Write the buffered rows as one shard (atomically) and update the manifest; the shard's path, or None."""
        with self._lock:
            if not self._pending:
                return None
            records = self._pending
            try:
                table = pa.Table.from_pylist(records, schema=TRACE_SCHEMA)
            except (pa.ArrowException, TypeError, ValueError) as exc:
                raise TraceWriteError(f"buffered rows do not fit the trace schema: {exc}") from exc
            seq = max((_shard_seq(s["file"]) for s in self._shards), default=-1) + 1
            name = f"part-{seq:05d}-{uuid.uuid4().hex[:8]}.parquet"
            final, tmp = self.dir / name, self.dir / f"{name}.tmp"
            try:
                pq.write_table(table, tmp, compression=self.compression)
                _fsync_file(tmp)
                fault_point("trace.flush.tmp_written")
                os.replace(tmp, final)
                _fsync_dir(self.dir)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                raise TraceWriteError(
                    f"could not write shard {final}: {exc.strerror or exc}; the {len(records)} buffered rows are "
                    f"kept: free space in (or make writable) {self.dir}, then call flush() or close() again"
                ) from exc
            ids = [[r["trace_id"], r["run_id"], r["episode_id"]] for r in records]
            self._shards.append({"file": name, "rows": len(records), "schema_version": ROW_SCHEMA_VERSION, "ids": ids})
            self._pending, self._oldest = [], None
            fault_point("trace.flush.shard_written")
            try:
                self._write_manifest()
            except OSError as exc:  # the shard is complete; the next writer adopts it
                raise TraceWriteError(f"shard {final} written but the manifest could not be updated: {exc}") from exc
            return final

    def add_shard(self, path: str | os.PathLike[str], *, keep: Callable[[str], bool] | None = None) -> Path | None:
        """Move a complete shard another writer made (an actor's, in a staging folder) into this run.

        Its rows enter the manifest like written ones; rows already written here, and rows whose trace id
        ``keep`` rejects, are left out (the shard is then rewritten without them). The source file is gone
        afterwards. Returns the new shard's path, or None when no row was kept.

        Raises:
            TraceWriteError: the writer is closed, or the shard cannot be read or moved.
        """
        source = Path(path)
        with self._lock:
            self._check_open()
            try:
                table = pq.read_table(source)
            except (pa.ArrowException, OSError) as exc:
                raise TraceWriteError(f"shard {source} cannot be read: {exc}") from exc
            ids = [list(t) for t in zip(*(table.column(c).to_pylist() for c in ("trace_id", "run_id", "episode_id")),
                                        strict=True)]
            mask = [not (t in self._trace_ids or (self._by_episode and e and (r, e) in self._episodes))
                    and (keep is None or keep(t)) for t, r, e in ids]
            seq = max((_shard_seq(s["file"]) for s in self._shards), default=-1) + 1
            name = f"part-{seq:05d}-{uuid.uuid4().hex[:8]}.parquet"
            final, tmp = self.dir / name, self.dir / f"{name}.tmp"
            try:
                if not any(mask):
                    source.unlink()
                    return None
                if all(mask):
                    os.replace(source, final)  # the common case: no copy (the staging folder is on this filesystem)
                else:
                    pq.write_table(table.filter(pa.array(mask)), tmp, compression=self.compression)
                    _fsync_file(tmp)
                    os.replace(tmp, final)
                    fault_point("trace.add_shard.rewritten")
                    source.unlink()
                _fsync_dir(self.dir)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                raise TraceWriteError(f"could not move shard {source} to {final}: {exc.strerror or exc}") from exc
            kept = [i for i, m in zip(ids, mask, strict=True) if m]
            self._shards.append({"file": name, "rows": len(kept), "schema_version": ROW_SCHEMA_VERSION, "ids": kept})
            for trace_id, run_id, episode_id in kept:
                self._trace_ids.add(trace_id)
                if episode_id:
                    self._episodes.add((run_id, episode_id))
            fault_point("trace.add_shard.moved")
            self._write_manifest()
            fault_point("trace.add_shard.merged")
            return final

    def close(self) -> None:
        """Flush and release the run directory; idempotent.

        If the last shard cannot be written (a full or read-only disk) the TraceWriteError is raised and the
        writer stays open, its rows buffered and the folder locked, so that ``close()`` can be called again.
        """
        with self._lock:
            if self._closed:
                return
            self.flush()
            self._closed = True
            self._release_lock()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise TraceWriteError(f"TraceWriter for {self.dir} is closed; open a new one (resume=True) to add rows")

    def _acquire_lock(self) -> IO[str] | None:
        handle = open(self.dir / ".lock", "a+")  # noqa: SIM115 - held for the writer's lifetime
        if fcntl is None:  # pragma: no cover
            return handle
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise RunDirLocked(str(self.dir)) from None
        return handle

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()  # closing the descriptor drops the flock
            self._lock_file = None

    def _load(self, resume: bool) -> None:
        for leftover in self.dir.glob("*.tmp"):  # a killed writer's partial file; we hold the lock
            leftover.unlink(missing_ok=True)
        on_disk = sorted((p.name for p in self.dir.iterdir() if _SHARD.match(p.name)), key=_shard_seq)
        if on_disk and not resume:
            raise TraceWriteError(
                f"{self.dir} already holds {len(on_disk)} shard(s); pass resume=True to add to them "
                "(written episodes are skipped) or use a new run_dir"
            )
        listed = {s["file"]: s for s in self._read_manifest()}
        for name in on_disk:
            entry = listed.get(name)
            if entry is None:
                entry = self._adopt(name)
            self._shards.append(entry)
            for trace_id, run_id, episode_id in entry["ids"]:
                self._trace_ids.add(trace_id)
                if episode_id:
                    self._episodes.add((run_id, episode_id))
        if [s["file"] for s in self._shards] != list(listed):
            missing = set(listed) - set(on_disk)
            if missing:
                log.warning("trace manifest lists shards no longer on disk, dropped: %s", sorted(missing))
            self._write_manifest()

    def _adopt(self, name: str) -> dict[str, Any]:
        """The manifest entry of a complete shard the manifest does not list (the writer died in between)."""
        try:
            table = pq.read_table(self.dir / name, columns=["schema_version", "trace_id", "run_id", "episode_id"])
        except (pa.ArrowException, OSError) as exc:
            raise TraceReadError(f"shard {self.dir / name} cannot be read: {exc}; move it out of {self.dir}") from exc
        cols = table.to_pydict()
        ids = [list(t) for t in zip(cols["trace_id"], cols["run_id"], cols["episode_id"], strict=True)]
        version = max(cols["schema_version"], default=ROW_SCHEMA_VERSION)
        log.info("adopted trace shard %s (%d rows) missing from the manifest", name, len(ids))
        return {"file": name, "rows": len(ids), "schema_version": version, "ids": ids}

    def _read_manifest(self) -> list[dict[str, Any]]:
        path = self.dir / MANIFEST_NAME
        if not path.exists():
            return []
        try:
            shards = json.loads(path.read_text())["shards"]
            return [s for s in shards if isinstance(s, dict) and {"file", "rows", "ids"} <= s.keys()]
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("unreadable trace manifest %s (%s); rebuilding it from the shards", path, exc)
            return []

    def _write_manifest(self) -> None:
        manifest = {
            "format": "openenv_train.traces",
            "schema_version": ROW_SCHEMA_VERSION,
            "rows": self.rows_written,
            "shards": self._shards,
        }
        path, tmp = self.dir / MANIFEST_NAME, self.dir / f"{MANIFEST_NAME}.tmp"
        with open(tmp, "w") as f:
            json.dump(manifest, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(self.dir)
