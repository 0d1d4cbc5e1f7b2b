"""Traces both ways with OpenEnv's harness (``openenv`` >= 0.10, ``openenv.core.harness``).

- Their ``collect`` output (``results.jsonl``: one ``EpisodeRecord`` per line, ``metadata.json`` beside it)
  becomes our trace rows: ``read_openenv_collect(path)``, ``import_openenv_collect(path, run_dir)`` or
  ``openenv-train import-traces PATH -o RUN``. Each assistant message is one turn (request = the messages
  before it, response = it), tool calls become env steps, the reward is theirs; records carry no token ids,
  so rows are ``rollout_type="eval"``: SFT (``to_sft_dataset``), rubrics and evals read them, GRPO does not.
- Our rows' ``trace`` is their ``TrainingTrace`` document: ``to_openenv_training_trace(row)`` gives the dict
  that ``openenv.core.harness.training.TrainingTrace.model_validate`` accepts, each turn's call-graph links in its
  ``metadata`` (their schema's only free place): ``parent_id`` (the node id of the call it continues, or None),
  ``line`` and ``main_line``; ``from_openenv_training_trace(document)`` reads such a document back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..trace import EnvInfo, EnvStep, TraceRow, TraceWriter, TrainingTrace, TrainingTurn

__all__ = ["from_openenv_training_trace", "import_openenv_collect", "iter_openenv_collect", "read_openenv_collect",
           "to_openenv_training_trace"]

RESULTS_FILE = "results.jsonl"  # the names OpenEnv's RolloutSerializer writes
METADATA_FILE = "metadata.json"


def _results_path(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS_FILE
    if not p.is_file():
        raise FileNotFoundError(f"{p} not found; give OpenEnv's collect output folder or its {RESULTS_FILE}")
    return p


def _turns(messages: list[dict[str, Any]]) -> list[TrainingTurn]:
    turns: list[TrainingTurn] = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        turns.append(TrainingTurn(
            node_id=f"turn-{len(turns)}", request={"messages": messages[:i]},
            response={"choices": [{"index": 0, "message": message, "finish_reason": finish}]},
            metadata={"turn": len(turns), "source": "openenv-collect"}))
    return turns


def _steps(tool_trace: list[dict[str, Any]]) -> list[EnvStep]:
    steps = []
    for entry in tool_trace:
        result = entry.get("result") or {}
        steps.append(EnvStep(action={"type": "call_tool", "tool_name": entry.get("tool_name"),
                                     "arguments": entry.get("arguments") or {}},
                             observation={"result": result.get("data"), "error": result.get("error"),
                                          "metadata": result.get("metadata") or {}},
                             done=bool(result.get("done", False))))
    return steps


def _row(record: dict[str, Any], *, env: str, run_id: str, where: str) -> TraceRow:
    try:
        messages = [dict(m) for m in record.get("messages") or []]
        task = record.get("task")
        reward = record.get("reward")
        return TraceRow(
            run_id=run_id, episode_id=str(record["episode_id"]), env=EnvInfo(name=env),
            task=task if isinstance(task, dict) else ({} if task is None else {"task": task}),
            reward=None if reward is None else float(reward), done=bool(record.get("done", False)),
            steps=_steps(record.get("tool_trace") or []), trace=TrainingTrace(turns=_turns(messages)),
            rewards={f"verify.{k}": float(v) for k, v in (record.get("verify_metrics") or {}).items()
                     if isinstance(v, int | float) and not isinstance(v, bool)},
            rollout_type="eval")
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: not an OpenEnv collect record ({type(exc).__name__}: {exc})") from None


def iter_openenv_collect(path: str | os.PathLike[str], *, env: str | None = None,
                         run_id: str | None = None) -> Iterator[TraceRow]:
    """Yield a TraceRow per record of OpenEnv's ``collect`` output (a folder or its ``results.jsonl``).

    Args:
        path: the output folder (``results.jsonl`` + ``metadata.json``) or the jsonl file.
        env: the env name for the rows (default: ``metadata.json``'s ``env``/``environment``, else "openenv").
        run_id: the rows' run id (default: the folder's name).

    Raises:
        ValueError: a line is not JSON or not a record; the message names the file and line.
    """
    results = _results_path(path)
    meta: dict[str, Any] = {}
    if (results.parent / METADATA_FILE).is_file():
        meta = json.loads((results.parent / METADATA_FILE).read_text() or "{}")
    name = env or str(meta.get("env") or meta.get("environment") or meta.get("env_name") or "openenv")
    run = run_id or results.parent.name
    with results.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{results}:{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not JSON ({exc})") from None
            yield _row(record, env=name, run_id=run, where=where)


def read_openenv_collect(path: str | os.PathLike[str], **kwargs: Any) -> list[TraceRow]:
    """Every row of OpenEnv's ``collect`` output; see :func:`iter_openenv_collect`."""
    return list(iter_openenv_collect(path, **kwargs))


def import_openenv_collect(path: str | os.PathLike[str], run_dir: str | os.PathLike[str], **kwargs: Any) -> int:
    """Write OpenEnv's ``collect`` output as a trace dataset under ``run_dir/traces/``; returns the rows written."""
    count = 0
    with TraceWriter(run_dir) as writer:
        for row in iter_openenv_collect(path, **kwargs):
            writer.write(row)
            count += 1
    return count


def to_openenv_training_trace(row: TraceRow) -> dict[str, Any]:
    """The row's trace as OpenEnv's ``TrainingTrace`` document (``schema_version`` 1, ``turns``), each turn's
    metadata with its call-graph links (``parent_id``, ``line``, ``main_line``)."""
    document = row.trace.model_dump(mode="json")
    graph = row.trace.call_graph()
    for turn, node in zip(document["turns"], graph.nodes, strict=True):
        turn["metadata"].update(parent_id=node.parent, line=node.line, main_line=graph.lines[node.line].main)
    return document


def from_openenv_training_trace(document: dict[str, Any]) -> TrainingTrace:
    """OpenEnv's ``TrainingTrace`` document (what :func:`to_openenv_training_trace` writes) as our trace.

    Raises:
        pydantic.ValidationError: it is not one.
    """
    return TrainingTrace.model_validate(document)
