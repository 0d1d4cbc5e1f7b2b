"""Terminal tasks (terminal-bench style): a setup script, a prompt, and a check script that decides success."""

from __future__ import annotations

import functools
import json
import random
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...core import did_you_mean

__all__ = ["TerminalTask", "bundled_terminal_tasks", "pick_terminal_task"]


class TerminalTask(BaseModel):
    """What to do in the terminal, the files it starts with, and the bash script that checks the result."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(default="custom", min_length=1, max_length=100)
    prompt: str = Field(min_length=1, max_length=20_000, description="The instruction, shown on reset.")
    setup: str = Field(default="", max_length=20_000, description="bash script run in the home directory first.")
    check: str = Field(min_length=1, max_length=20_000,
                       description="bash script run in the home directory on submit; exit status 0 = solved.")


@functools.cache
def bundled_terminal_tasks() -> dict[str, TerminalTask]:
    """The tasks shipped with the env (``tasks.json``) by id, in file order."""
    items = json.loads(resources.files(__package__).joinpath("tasks.json").read_text(encoding="utf-8"))
    return {item["id"]: TerminalTask.model_validate(item) for item in items}


def pick_terminal_task(task_id: str | None, seed: int | None, task: TerminalTask | dict[str, Any] | None) -> TerminalTask:
    """``task`` when given, else the bundled ``task_id``, else a bundled task drawn by ``seed``.

    Raises:
        ValueError: both ``task`` and ``task_id``, or an unknown ``task_id`` (close matches suggested).
    """
    tasks = bundled_terminal_tasks()
    if task is not None:
        if task_id is not None:
            raise ValueError("pass task (a custom task) or task_id (a bundled one), not both")
        return TerminalTask.model_validate(task) if isinstance(task, dict) else task
    if task_id is None:
        return list(tasks.values())[random.Random(seed).randrange(len(tasks))]
    try:
        return tasks[task_id]
    except KeyError:
        raise ValueError(f"no bundled terminal task {task_id!r}{did_you_mean(task_id, tasks, otherwise='.')} "
                         f"Known: {', '.join(tasks)}") from None
