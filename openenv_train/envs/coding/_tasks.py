"""Coding tasks: a prompt, the function to write and its hidden tests; the bundled set and how one is chosen."""

from __future__ import annotations

import functools
import json
import random
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...core import did_you_mean

__all__ = ["CodingTask", "HiddenTest", "bundled_tasks", "choose_task"]


class HiddenTest(BaseModel):
    """One hidden test: call the function with ``args``/``kwargs``; the result must equal ``expected``.

    Values are JSON: a returned tuple counts as a list, ints and floats compare as numbers (floats with a
    1e-9 tolerance), and a bool only equals a bool.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    args: list[Any] = Field(default_factory=list, description="Positional arguments.")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments.")
    expected: Any = Field(description="The value the call must return.")


class CodingTask(BaseModel):
    """A function to write and the hidden tests that grade it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(default="custom", min_length=1, max_length=100, description="Name of the task.")
    prompt: str = Field(min_length=1, max_length=20_000, description="What to write, shown on reset.")
    function: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="Name of the function the tests call.")
    tests: list[HiddenTest] = Field(min_length=1, max_length=200, description="Hidden tests, run on submit.")


@functools.cache
def bundled_tasks() -> tuple[CodingTask, ...]:
    """The tasks shipped with the env (``tasks.json``), in file order."""
    text = resources.files(__package__).joinpath("tasks.json").read_text(encoding="utf-8")
    return tuple(CodingTask.model_validate(item) for item in json.loads(text))


def choose_task(*, task_id: str | None = None, seed: int | None = None,
                task: CodingTask | dict[str, Any] | None = None) -> CodingTask:
    """The task of an episode: ``task`` if given, else bundled ``task_id``, else one drawn by ``seed``.

    Raises:
        ValueError: both ``task`` and ``task_id``, an unknown ``task_id`` or an invalid ``task``.
    """
    if task is not None:
        if task_id is not None:
            raise ValueError("pass either task (a custom task) or task_id (a bundled one), not both")
        return task if isinstance(task, CodingTask) else CodingTask.model_validate(task)
    tasks = bundled_tasks()
    if task_id is not None:
        found = next((t for t in tasks if t.id == task_id), None)
        if found is None:
            ids = [t.id for t in tasks]
            hint = did_you_mean(task_id, ids, otherwise=".")
            raise ValueError(f"no bundled coding task {task_id!r}{hint} Known: {', '.join(ids)}")
        return found
    rng = random.Random(seed) if seed is not None else random.SystemRandom()
    return tasks[rng.randrange(len(tasks))]
