"""``traces_to_sft_dataset``: trace rows (or a run directory) as a ``messages`` dataset for TRL's SFTTrainer."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from ...trace import TraceRow, to_sft_dataset

if TYPE_CHECKING:
    import datasets

__all__ = ["traces_to_sft_dataset"]


def traces_to_sft_dataset(rows_or_run_dir: Iterable[TraceRow] | str | os.PathLike[str], *,
                          min_reward: float | None = None, ok_only: bool = True,
                          tool_arguments: Literal["object", "string"] = "object",
                          branches: Literal["drop", "rows"] = "rows") -> datasets.Dataset:
    """One conversation per kept episode (the main line of its calls), in a ``messages`` column (and ``tools``), for
    ``SFTTrainer``.

    A thin wrapper over :func:`openenv_train.trace.to_sft_dataset`.

    Args:
        rows_or_run_dir: rows, or a run directory written by a TraceWriter.
        min_reward: keep rows whose reward is at least this (unscored rows are dropped too).
        ok_only: drop failed episodes.
        tool_arguments: tool call arguments as objects (what chat templates expect) or JSON strings.
        branches: ``"rows"`` (default) adds a row per branch of the call graph (side calls, subagents, retries);
            ``"drop"`` keeps the main line alone.
    """
    return to_sft_dataset(rows_or_run_dir, min_reward=min_reward, ok_only=ok_only, tool_arguments=tool_arguments,
                          branches=branches)
