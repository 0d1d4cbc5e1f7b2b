"""A light index over trace shards: the table's columns for every row, full rows read one row group at a time.

The index reads only the small identity/outcome columns of each shard (never ``turns`` or ``steps``), so a
table page of a large run costs a few columns; an episode page reads the one row group that holds the row.
"""

from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import OpenEnvTrainError

__all__ = ["EpisodeFilter", "SourceError", "TraceIndex", "find_shards"]

_INDEX_COLUMNS = ("trace_id", "episode_id", "group_id", "env", "policy", "reward", "done", "truncated", "ok",
                  "error", "rollout_type")
_JSON_COLUMNS = ("task", "rewards", "timings")


class SourceError(OpenEnvTrainError, ValueError):
    """The path given to the viewer holds no trace shards."""


def find_shards(source: str | os.PathLike[str]) -> list[Path]:
    """The Parquet files of a run dir (``<run>/traces/*.parquet``), a folder of them, or one file.

    Raises:
        SourceError: the path is missing or holds no ``.parquet`` file.
    """
    path = Path(source)
    if path.is_file():
        if path.suffix != ".parquet":
            raise SourceError(f"{path} is not a .parquet file; give a run dir, a folder of shards or a .parquet file")
        return [path]
    if not path.is_dir():
        raise SourceError(f"{path} does not exist; give a run dir (with traces/), a folder of shards or a .parquet file")
    if (path / "traces").is_dir():
        from ..trace import shard_paths

        return shard_paths(path)
    found = sorted(p for p in path.rglob("*.parquet") if p.is_file())
    if not found:  # a run dir may have no shard yet; any other folder must hold some
        raise SourceError(f"{path} holds no .parquet file and no traces/ folder; give a run dir or a folder of shards")
    return found


@dataclass
class EpisodeFilter:
    """Which rows the episode table shows (None = no constraint)."""

    env: str | None = None
    ok: bool | None = None
    min_reward: float | None = None
    max_reward: float | None = None
    group: str | None = None

    def match(self, entry: dict[str, Any]) -> bool:
        """Whether an index entry passes; a reward bound drops rows that were never scored."""
        if self.env is not None and entry["env"] != self.env:
            return False
        if self.ok is not None and entry["ok"] is not self.ok:
            return False
        if self.group is not None and entry["group_id"] != self.group:
            return False
        reward = entry["reward"]
        if self.min_reward is not None and (reward is None or reward < self.min_reward):
            return False
        return not (self.max_reward is not None and (reward is None or reward > self.max_reward))


@dataclass
class _Shard:
    path: Path
    mtime: float
    rows: int
    group_starts: list[int] = field(default_factory=list)


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class TraceIndex:
    """The rows of a trace source, indexed for paging and filtering; shards added later are picked up.

    Args:
        source: a run dir, a folder of ``.parquet`` files, or one file.
    """

    def __init__(self, source: str | os.PathLike[str]) -> None:
        self.source = Path(source)
        self._lock = threading.Lock()
        self._shards: dict[Path, _Shard] = {}
        self.entries: list[dict[str, Any]] = []
        self._by_id: dict[str, int] = {}
        find_shards(self.source)  # fail early on a bad path
        self.refresh()

    def refresh(self) -> None:
        """Index shards that appeared or changed since the last call (a run that is still writing)."""
        import pyarrow.parquet as pq

        with self._lock:
            paths = find_shards(self.source)
            current = {p: p.stat().st_mtime for p in paths}
            if all(p in self._shards and self._shards[p].mtime == m for p, m in current.items()) and \
                    len(current) == len(self._shards):
                return
            self._shards, self.entries, self._by_id = {}, [], {}
            for path in paths:
                meta = pq.ParquetFile(path)
                names = set(meta.schema_arrow.names)
                table = meta.read(columns=[c for c in _INDEX_COLUMNS if c in names])
                starts, total = [], 0
                for i in range(meta.num_row_groups):
                    starts.append(total)
                    total += meta.metadata.row_group(i).num_rows
                self._shards[path] = _Shard(path, current[path], total, starts)
                for k, rec in enumerate(table.to_pylist()):
                    self._add(path, k, rec)

    def _add(self, path: Path, position: int, rec: dict[str, Any]) -> None:
        index = len(self.entries)
        trace_id = rec.get("trace_id") or f"row-{index}"
        if trace_id in self._by_id:  # ids must be unique in the URL space
            trace_id = f"{trace_id}-{index}"
        env = rec.get("env") or {}
        policy = rec.get("policy") or {}
        error = rec.get("error") or None
        self._by_id[trace_id] = index
        self.entries.append({
            "id": trace_id, "index": index, "episode_id": rec.get("episode_id"), "group_id": rec.get("group_id"),
            "env": env.get("name") if isinstance(env, dict) else env, "reward": _clean(rec.get("reward")),
            "ok": rec.get("ok", True), "done": rec.get("done"), "truncated": rec.get("truncated"),
            "error": error.get("type") if isinstance(error, dict) else None,
            "model": policy.get("model") if isinstance(policy, dict) else None,
            "policy_version": policy.get("version") if isinstance(policy, dict) else None,
            "rollout_type": rec.get("rollout_type"), "_file": path, "_pos": position,
        })

    def page(self, flt: EpisodeFilter, offset: int = 0, limit: int = 50) -> dict[str, Any]:
        """One page of the filtered table: ``{"total", "offset", "limit", "episodes"}`` (entries without file info)."""
        self.refresh()
        with self._lock:
            matched = [e for e in self.entries if flt.match(e)]
        rows = [{k: v for k, v in e.items() if not k.startswith("_")} for e in matched[offset:offset + limit]]
        return {"total": len(matched), "offset": offset, "limit": limit, "episodes": rows}

    def facets(self) -> dict[str, Any]:
        """Values the table's filters offer: env names and group ids (first 1000), row count."""
        with self._lock:
            envs = sorted({e["env"] for e in self.entries if e["env"]})
            groups = sorted({e["group_id"] for e in self.entries if e["group_id"]})
            return {"envs": envs, "groups": groups[:1000], "rows": len(self.entries)}

    def record(self, trace_id: str) -> dict[str, Any] | None:
        """The full Arrow record of one row (reads only its row group), or None for an unknown id."""
        import pyarrow.parquet as pq

        self.refresh()
        with self._lock:
            index = self._by_id.get(trace_id)
            if index is None:
                return None
            entry = self.entries[index]
            shard = self._shards[entry["_file"]]
        pos = entry["_pos"]
        group = max(i for i, start in enumerate(shard.group_starts) if start <= pos)
        table = pq.ParquetFile(shard.path).read_row_group(group)
        rec: dict[str, Any] = table.slice(pos - shard.group_starts[group], 1).to_pylist()[0]
        for key in _JSON_COLUMNS:
            if isinstance(rec.get(key), str):
                rec[key] = _loads(rec[key])
        rec["_index"] = index
        return rec

    def rewards(self) -> list[float | None]:
        """Every row's reward in row order (for curves when the run has no metrics.jsonl)."""
        self.refresh()
        with self._lock:
            return [e["reward"] for e in self.entries]


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
