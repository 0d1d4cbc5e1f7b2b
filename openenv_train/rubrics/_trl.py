"""TRL reward functions from rubrics: ``f(prompts, completions, **kwargs) -> list[float | None]``.

Each item is scored as a trace row: the ``row_column`` keyword (a dataset column holding the TraceRow, as a
model, dict or JSON string) when the batch carries it, else a one-turn row built from the prompt and completion.
So a row scored here gets exactly the numbers the rubric gives it directly.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from ..trace import EnvInfo, TraceRow, TrainingTrace, build_turn
from ._base import Rubric, run_sync

__all__ = ["as_trace_row", "reward_function"]

RewardFunction = Callable[..., list[float | None]]


def _messages(value: Any, role: str) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    return [dict(m) for m in value]


def as_trace_row(value: Any = None, *, prompt: Any = None, completion: Any = None, env: str = "trl") -> TraceRow:
    """A TraceRow from a row value (TraceRow, dict or JSON), or a one-turn row from a prompt and completion."""
    if isinstance(value, TraceRow):
        return value
    if isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, dict):
        return TraceRow.model_validate(value)
    reply = _messages(completion if completion is not None else "", "assistant")
    turn = build_turn(messages=_messages(prompt if prompt is not None else "", "user"), message=reply[-1])
    return TraceRow(env=EnvInfo(name=env), trace=TrainingTrace(turns=[turn]), rollout_type="eval")


def reward_function(rubric: Rubric, *, row_column: str = "trace_row", component: str | None = None) -> RewardFunction:
    """A TRL reward function scoring each completion with ``rubric``.

    Args:
        rubric: the rubric (its total is the reward, or the named ``component``'s score).
        row_column: the keyword (dataset column) that carries each item's trace row, if any.
        component: report this component instead of the total.

    Returns:
        ``f(prompts, completions, **kwargs) -> list[float | None]`` named after the rubric (or component).
    """

    def reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        rows_in = kwargs.get(row_column)
        rows = [as_trace_row(rows_in[i] if rows_in is not None else None, prompt=p, completion=c)
                for i, (p, c) in enumerate(zip(prompts, completions, strict=True))]

        async def all_rows() -> list[float | None]:
            results = await asyncio.gather(*(rubric.ascore(r) for r in rows))
            return [r.components.get(component) if component else r.total for r in results]

        return run_sync(all_rows())

    reward.__name__ = reward.__qualname__ = component or rubric.name
    return reward
