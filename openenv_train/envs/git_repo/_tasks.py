"""git tasks: a setup script that builds the repository, a prompt, and the checks of its final state."""

from __future__ import annotations

import functools
import json
import random
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...core import did_you_mean

__all__ = ["GitTask", "RepoCheck", "bundled_git_tasks", "choose_git_task"]


class RepoCheck(BaseModel):
    """A shell command run in the repository after a submit; exit status 0 means the check holds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=100)
    command: str = Field(min_length=1, max_length=2_000)


class GitTask(BaseModel):
    """A repository to build, what to do to it, and how its end state is checked."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(default="custom", min_length=1, max_length=100, description="Name of the task.")
    prompt: str = Field(min_length=1, max_length=20_000, description="What to do, shown on reset.")
    setup: str = Field(default="", max_length=20_000,
                       description="Shell script run in a fresh repository (branch main, no commits) to build it.")
    checks: list[RepoCheck] = Field(min_length=1, max_length=50, description="Checks run on submit.")


@functools.cache
def bundled_git_tasks() -> tuple[GitTask, ...]:
    """The tasks shipped with the env (``tasks.json``), in file order."""
    text = resources.files(__package__).joinpath("tasks.json").read_text(encoding="utf-8")
    return tuple(GitTask.model_validate(item) for item in json.loads(text))


def choose_git_task(*, task_id: str | None = None, seed: int | None = None,
                    task: GitTask | dict[str, Any] | None = None) -> GitTask:
    """A custom ``task``, else the bundled ``task_id``, else a bundled task drawn by ``seed``.

    Raises:
        ValueError: both ``task`` and ``task_id``, an unknown ``task_id`` or an invalid ``task``.
    """
    if task is not None and task_id is not None:
        raise ValueError("pass either task (a custom task) or task_id (a bundled one), not both")
    if task is not None:
        return GitTask.model_validate(task) if isinstance(task, dict) else task
    by_id = {t.id: t for t in bundled_git_tasks()}
    if task_id is None:
        draw = random.Random(seed) if seed is not None else random.SystemRandom()
        return list(by_id.values())[draw.randrange(len(by_id))]
    if task_id not in by_id:
        raise ValueError(f"no bundled git task {task_id!r}{did_you_mean(task_id, by_id, otherwise='.')} "
                         f"Known: {', '.join(by_id)}")
    return by_id[task_id]
