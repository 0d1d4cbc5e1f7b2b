"""ART (openpipe-art): trace rows as ``art.Trajectory`` / ``art.TrajectoryGroup`` (ART re-tokenises itself).

:func:`to_art_trajectory_fields` is pure data (the keyword arguments of ``art.Trajectory``: assistant replies
stay plain messages, which ART accepts in ``messages_and_choices``); :func:`to_art_groups` builds the objects
and imports ``art`` lazily (``pip install openpipe-art``; its ``[backend]`` extra cannot share our env).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..harbor import TraceRow, conversation

__all__ = ["to_art_groups", "to_art_trajectory_fields"]


def to_art_trajectory_fields(row: TraceRow) -> dict[str, Any]:
    """``art.Trajectory(**fields)`` for one row: messages, tools, reward (None -> 0.0), metrics, metadata."""
    turns = row.trace.turns
    tools = turns[0].request.get("tools") if turns else None
    metrics: dict[str, float | int | bool] = {k: float(v) for k, v in row.rewards.items() if v is not None}
    metrics.update(turns=len(turns), steps=len(row.steps), done=row.done, ok=row.ok)
    metadata: dict[str, str | int | float | bool | None] = {
        "episode_id": row.episode_id, "group_id": row.group_id, "run_id": row.run_id, "trace_id": row.trace_id,
        "env": row.env.name, "task": json.dumps(row.task, default=str), "policy_version": row.policy.version}
    return {"messages_and_choices": conversation(row.trace), "tools": tools, "reward": float(row.reward or 0.0),
            "metrics": metrics, "metadata": metadata}


def to_art_groups(rows: Sequence[TraceRow]) -> list[Any]:
    """``art.TrajectoryGroup`` per ``group_id`` (a row without one is its own group), in first-seen order.

    Raises:
        ImportError: ``openpipe-art`` is not installed (with the install line).
    """
    try:
        import art
    except ImportError as exc:
        raise ImportError("to_art_groups needs ART: pip install 'openpipe-art==0.5.18' (the base package, "
                          "not its [backend] extra)") from exc
    groups: dict[str, list[Any]] = {}
    for row in rows:
        groups.setdefault(row.group_id or row.episode_id, []).append(art.Trajectory(**to_art_trajectory_fields(row)))
    return [art.TrajectoryGroup(trajectories) for trajectories in groups.values()]
