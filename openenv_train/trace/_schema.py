"""The fixed Arrow schema of trace shards, and the conversion of TraceRow to and from its records.

Layout (one row per episode; field order frozen, append new columns at the end and bump the version):

- identity and outcome are typed columns: ``trace_id``, ``run_id``, ``episode_id``, ``group_id``,
  ``env`` (struct), ``policy`` (struct), ``reward`` (nullable double: null = never scored), ``done``,
  ``truncated``, ``ok``, ``error`` (nullable struct), ``rollout_type``;
- token data stays nested: ``turns`` is ``list<struct<node_id, prompt_token_ids: list<int64>,
  completion_token_ids: list<int64>, per_token_logps: list<double>, loss_mask: list<int8>, ...>>``;
- free-form objects are JSON strings: ``task``, ``rewards``, ``timings``, each step's ``action`` and
  ``observation``, each turn's ``request``, ``response`` and ``metadata``.

JSON strings (not Arrow structs) keep the schema fixed whatever the envs and models put in those objects,
so every shard of a run has the same schema and ``datasets`` concatenates them without casting.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ._errors import TraceReadError
from ._rows import ROW_SCHEMA_VERSION, TraceRow

__all__ = ["MIGRATIONS", "TRACE_SCHEMA", "from_record", "migrate_record", "to_record"]

_TURN = pa.struct(
    [
        ("node_id", pa.string()),
        ("prompt_token_ids", pa.list_(pa.int64())),
        ("completion_token_ids", pa.list_(pa.int64())),
        ("per_token_logps", pa.list_(pa.float64())),
        ("loss_mask", pa.list_(pa.int8())),
        ("request", pa.string()),
        ("response", pa.string()),
        ("metadata", pa.string()),
    ]
)
_STEP = pa.struct(
    [
        ("action", pa.string()),
        ("observation", pa.string()),
        ("reward", pa.float64()),
        ("done", pa.bool_()),
        ("seconds", pa.float64()),
    ]
)

#: The Arrow schema of every shard (row layout :data:`ROW_SCHEMA_VERSION`).
TRACE_SCHEMA = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("trace_id", pa.string()),
        ("run_id", pa.string()),
        ("episode_id", pa.string()),
        ("group_id", pa.string()),
        ("env", pa.struct([("name", pa.string()), ("version", pa.string()), ("url", pa.string())])),
        ("task", pa.string()),
        ("policy", pa.struct([("model", pa.string()), ("version", pa.int64())])),
        ("reward", pa.float64()),
        ("rewards", pa.string()),
        ("done", pa.bool_()),
        ("truncated", pa.bool_()),
        ("ok", pa.bool_()),
        ("error", pa.struct([("type", pa.string()), ("message", pa.string())])),
        ("steps", pa.list_(_STEP)),
        ("trace_schema_version", pa.int32()),
        ("turns", pa.list_(_TURN)),
        ("rollout_type", pa.string()),
        ("timings", pa.string()),
    ],
    metadata={"openenv_train.row_schema_version": str(ROW_SCHEMA_VERSION)},
)

#: ``MIGRATIONS[n]`` turns a record of layout ``n`` into one of layout ``n + 1`` (decoded JSON fields).
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def to_record(row: TraceRow) -> dict[str, Any]:
    """The Arrow record (a dict matching :data:`TRACE_SCHEMA`) of one row."""
    data = row.model_dump(mode="json")
    trace = data.pop("trace")
    for key in ("task", "rewards", "timings"):
        data[key] = _dumps(data[key])
    for step in data["steps"]:
        step["action"], step["observation"] = _dumps(step["action"]), _dumps(step["observation"])
    data["trace_schema_version"] = trace["schema_version"]
    data["turns"] = [
        {**turn, "request": _dumps(turn["request"]), "response": _dumps(turn["response"]),
         "metadata": _dumps(turn["metadata"])}
        for turn in trace["turns"]
    ]
    return data


def migrate_record(record: dict[str, Any]) -> dict[str, Any]:
    """Bring a decoded record of any older layout up to :data:`ROW_SCHEMA_VERSION`.

    Raises:
        TraceReadError: the record is newer than this code, or no migration covers its version.
    """
    version = int(record.get("schema_version") or 0)
    if version > ROW_SCHEMA_VERSION:
        raise TraceReadError(
            f"trace row schema_version {version} is newer than this openenv_train reads ({ROW_SCHEMA_VERSION}); "
            "upgrade openenv_train"
        )
    while version < ROW_SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise TraceReadError(f"no migration from trace row schema_version {version}")
        record = MIGRATIONS[version](record)
        version += 1
        record["schema_version"] = version
    return record


def from_record(record: dict[str, Any]) -> TraceRow:
    """The row of one Arrow record (as read from a shard), migrated to the current layout."""
    data = dict(record)
    for key in ("task", "rewards", "timings"):
        data[key] = json.loads(data[key]) if data.get(key) else {}
    data["steps"] = [
        {**step, "action": json.loads(step["action"]), "observation": json.loads(step["observation"])}
        for step in data.get("steps") or []
    ]
    turns = [
        {**turn, "request": json.loads(turn["request"]), "response": json.loads(turn["response"]),
         "metadata": json.loads(turn["metadata"])}
        for turn in data.pop("turns", None) or []
    ]
    data["trace"] = {"schema_version": data.pop("trace_schema_version", None) or 1, "turns": turns}
    return TraceRow.model_validate(migrate_record(data))
