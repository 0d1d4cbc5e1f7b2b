"""Scoring a trace dataset: reward components become new columns of a new version; the source is never touched.

A run ``RUN`` (shards in ``RUN/traces/``) scored with rubric ``wordle`` gives ``RUN/versions/v1/`` (then
``v2``...) holding ``traces/part-00000-<hex>.parquet`` (every source column unchanged, plus one
``reward_<component>`` double column per component, ``rubric_errors`` (JSON) and ``step_rewards``) and
``version.json`` (source, rubric, columns). ``load_dataset(RUN/versions/v1)`` reads it like any run.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..trace import TRACE_SCHEMA, TraceReadError, TraceRow, from_record, shard_paths
from ._base import Rubric, RubricResult, run_sync

__all__ = [
    "VERSIONS_DIR",
    "read_table",
    "score_dataset",
    "score_rows",
    "table_rows",
]

VERSIONS_DIR = "versions"


def read_table(source: str | os.PathLike[str]) -> pa.Table:
    """Every shard of a run (or a scored version) as one table.

    Raises:
        TraceReadError: no shard under ``source/traces``.
    """
    paths = shard_paths(source)
    if not paths:
        raise TraceReadError(f"no trace shards under {Path(source) / 'traces'}; give a run folder or a scored version")
    return pa.concat_tables([pq.read_table(p) for p in paths], promote_options="default")


def table_rows(table: pa.Table) -> list[TraceRow]:
    base = table.select([name for name in TRACE_SCHEMA.names if name in table.column_names])
    return [from_record(record) for record in base.to_pylist()]


async def _score_all(rubric: Rubric, rows: list[TraceRow], concurrency: int) -> list[RubricResult]:
    limit = asyncio.Semaphore(concurrency)

    async def one(row: TraceRow) -> RubricResult:
        async with limit:
            return await rubric.ascore(row)

    return list(await asyncio.gather(*(one(r) for r in rows)))


def score_rows(rubric: Rubric, rows: list[TraceRow], *, concurrency: int = 16) -> list[RubricResult]:
    """Score rows concurrently (sync; safe inside a running event loop)."""
    return run_sync(_score_all(rubric, rows, concurrency))


def _next_version(root: Path) -> Path:
    folder = root / VERSIONS_DIR
    taken = [int(p.name[1:]) for p in folder.glob("v*") if p.name[1:].isdigit()] if folder.is_dir() else []
    return folder / f"v{max(taken, default=0) + 1}"


def score_dataset(source: str | os.PathLike[str], rubric: Rubric, *, output: str | os.PathLike[str] | None = None,
                  rubric_name: str | None = None, concurrency: int = 16) -> Path:
    """Score every row of ``source`` and write a new version with the components as new columns.

    Args:
        source: a run folder (``traces/*.parquet``) or an earlier version.
        rubric: what scores each row.
        output: the new version's folder (must not exist); default ``<run>/versions/v<N+1>``.
        rubric_name: recorded in ``version.json`` (default the rubric's name).
        concurrency: rows scored at once.

    Returns:
        The new version's folder.

    Raises:
        TraceReadError: ``source`` holds no shards.
        FileExistsError: ``output`` exists (a version is never overwritten).
    """
    source = Path(source)
    table = read_table(source)
    results = score_rows(rubric, table_rows(table), concurrency=concurrency)
    root = source.parent.parent if source.parent.name == VERSIONS_DIR else source
    out = Path(output) if output is not None else _next_version(root)
    if out.exists():
        raise FileExistsError(f"{out} exists; a scored version is never overwritten: pick a new --output")
    names = list(dict.fromkeys(name for r in results for name in r.components))
    columns: dict[str, Any] = {f"reward_{n}": pa.array([r.components.get(n) for r in results], pa.float64())
                               for n in names}
    columns["rubric_errors"] = pa.array([json.dumps(r.errors) for r in results], pa.string())
    columns["step_rewards"] = pa.array([r.step_rewards for r in results], pa.list_(pa.float64()))
    for name, column in columns.items():
        if name in table.column_names:
            table = table.drop_columns([name])
        table = table.append_column(name, column)
    (out / "traces").mkdir(parents=True)
    pq.write_table(table, out / "traces" / f"part-00000-{uuid.uuid4().hex[:8]}.parquet", compression="zstd")
    info = {"source": str(source.resolve()), "rubric": rubric_name or rubric.name, "rows": table.num_rows,
            "columns": list(columns)}
    (out / "version.json").write_text(json.dumps(info, indent=1) + "\n")
    return out
