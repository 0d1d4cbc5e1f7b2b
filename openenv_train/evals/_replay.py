"""The replay task: a trace dataset becomes Inspect Samples; the recorded episode is replayed, not regenerated."""

from __future__ import annotations

import os
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

from ..rubrics import Rubric, read_table, table_rows
from ..trace import TraceRow, reply_of, text_of
from ._scorer import ROW_KEY, rubric_scorer

__all__ = ["replay", "replay_task", "trace_samples"]


def _prompt(row: TraceRow) -> str:
    turns = row.trace.turns
    for message in turns[0].request.get("messages", []) if turns else []:
        if message.get("role") == "user":
            return text_of(message.get("content"))
    return str(row.task.get("prompt") or f"{row.env.name} episode {row.episode_id or row.trace_id}")


def trace_samples(rows: list[TraceRow]) -> list[Sample]:
    """One Sample per row: input = its first user message, metadata holds the row (``trace_row``)."""
    return [Sample(id=row.trace_id, input=_prompt(row), target="",
                   metadata={ROW_KEY: row.model_dump_json(), "env": row.env.name, "episode_id": row.episode_id})
            for row in rows]


@solver
def replay() -> Solver:
    """Put the row's final model reply in the state (no model is called) and keep the row for scoring."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        row = TraceRow.model_validate_json(state.metadata[ROW_KEY])
        reply = reply_of(row.trace.turns[-1]) if row.trace.turns else None
        text = text_of(reply.get("content")) if reply else ""
        state.messages.append(ChatMessageAssistant(content=text, source="generate"))
        state.output = ModelOutput.from_content(model=row.policy.model or "replay", content=text)
        return state

    return solve


def replay_task(dataset: str | os.PathLike[str] | list[TraceRow], rubric: str | Rubric = "wordle",
                **task_args: Any) -> Task:
    """An Inspect Task over a trace dataset (run folder, scored version, or rows), scored by ``rubric``."""
    rows = dataset if isinstance(dataset, list) else table_rows(read_table(dataset))
    return Task(dataset=MemoryDataset(trace_samples(rows), name="traces"), solver=replay(),
                scorer=rubric_scorer(rubric), **task_args)
