"""Reading trace shards back: as TraceRows (migrated to the current layout) or as a ``datasets.Dataset``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from ._errors import TraceReadError
from ._rows import TraceRow
from ._schema import TRACE_SCHEMA, from_record
from ._writer import _SHARD, TRACES_DIR, _shard_seq

if TYPE_CHECKING:
    import datasets

__all__ = ["iter_traces", "load_dataset", "read_traces", "shard_paths", "traces_glob"]


def traces_glob(run_dir: str | os.PathLike[str]) -> str:
    """The ``data_files`` pattern of a run's shards: ``<run_dir>/traces/*.parquet``."""
    return f"{Path(run_dir) / TRACES_DIR}/*.parquet"


def shard_paths(run_dir: str | os.PathLike[str]) -> list[Path]:
    """The complete shards of a run, oldest first (the same files ``traces_glob`` matches)."""
    folder = Path(run_dir) / TRACES_DIR
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if _SHARD.match(p.name)), key=lambda p: _shard_seq(p.name))


def iter_traces(run_dir: str | os.PathLike[str]) -> Iterator[TraceRow]:
    """Yield every row of a run, shard by shard, migrated to the current TraceRow layout.

    Raises:
        TraceReadError: a shard cannot be read, or holds rows of a newer schema version.
    """
    for path in shard_paths(run_dir):
        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as exc:
            raise TraceReadError(f"trace shard {path} cannot be read: {exc}") from exc
        for record in table.to_pylist():
            yield from_record(record)


def read_traces(run_dir: str | os.PathLike[str]) -> list[TraceRow]:
    """Every row of a run, in write order (see :func:`iter_traces`)."""
    return list(iter_traces(run_dir))


def load_dataset(run_dir: str | os.PathLike[str], **kwargs: Any) -> datasets.Dataset:
    """A run's traces as a ``datasets.Dataset`` (columns of :data:`TRACE_SCHEMA`; JSON columns stay strings).

    This is ``datasets.load_dataset("parquet", data_files=traces_glob(run_dir), split="train", **kwargs)``;
    a run with no shard yet gives an empty dataset with the same columns.
    """
    import datasets

    if not shard_paths(run_dir):
        features = datasets.Features.from_arrow_schema(TRACE_SCHEMA)
        return datasets.Dataset.from_dict({name: [] for name in features}, features=features)
    dataset = datasets.load_dataset("parquet", data_files=traces_glob(run_dir), split="train", **kwargs)
    assert isinstance(dataset, datasets.Dataset)
    return dataset
