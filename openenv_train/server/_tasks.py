"""Task splits an env declares (OpenEnv 0.10's Task API): what each split holds and how a task resets the env.

An env overrides :meth:`~openenv_train.server.Environment.task_splits` and returns :class:`TaskSplit` s; the base
class answers OpenEnv's ``list_splits``/``list_tasks``/``num_tasks``/``get_task``/``get_task_range`` from them and
turns ``reset(split=..., index=...)`` into the task's reset options. Seeded games declare a seed range per split
(:func:`seed_splits`); datasets, word lists and task folders a list of tasks (:func:`listed_split`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..core import OpenEnvTrainError

__all__ = ["SEED_SPLITS", "SplitType", "TaskSplit", "UnknownSplit", "find_split", "listed_split", "seed_splits"]

SplitType = Literal["train", "validation", "test"]

#: The seeded games' splits: training seeds below 1,000,000 (the general GRPO recipe's ``eval.seed``), held-out
#: ones from there; disjoint by construction.
SEED_SPLITS: dict[str, tuple[SplitType, range]] = {
    "train": ("train", range(0, 1_000_000)),
    "test": ("test", range(1_000_000, 2_000_000)),
}


class UnknownSplit(OpenEnvTrainError, ValueError):
    """A split name the env does not declare (the server answers 400 with the names it has)."""


@dataclass(frozen=True)
class TaskSplit:
    """One split: its name, OpenEnv's split type, its tasks and the reset options of each task.

    ``tasks`` may be any sequence (a ``range`` of seeds costs nothing however long); ``describe`` turns an item
    into the JSON task spec the Task API serves, ``options`` into ``reset``'s keyword options.
    """

    name: str
    type: SplitType
    tasks: Sequence[Any]
    describe: Callable[[int, Any], dict[str, Any]]
    options: Callable[[Any], dict[str, Any]]

    def __len__(self) -> int:
        return len(self.tasks)

    def spec(self, index: int) -> dict[str, Any]:
        """The JSON task spec at ``index``.

        Raises:
            IndexError: ``index`` is outside ``0 .. len - 1``.
        """
        return self.describe(index, self.tasks[_check_index(self, index)])

    def reset_options(self, index: int) -> dict[str, Any]:
        """``reset``'s keyword options for the task at ``index`` (IndexError outside the split)."""
        return self.options(self.tasks[_check_index(self, index)])

    def descriptor(self) -> dict[str, Any]:
        """What ``GET /{env}/splits`` lists for this split."""
        return {"name": self.name, "type": self.type, "num_tasks": len(self.tasks)}


def _check_index(split: TaskSplit, index: int) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(split.tasks):
        raise IndexError(f"task index {index!r} is outside split {split.name!r} (0..{len(split.tasks) - 1})")
    return index


def seed_splits(splits: Mapping[str, tuple[SplitType, range]] = SEED_SPLITS) -> list[TaskSplit]:
    """A seeded game's splits: each a range of reset seeds; task ``i`` of a split resets with its ``i``-th seed.

    >>> [s.spec(2) for s in seed_splits()]
    [{'id': 'train-2', 'index': 2, 'seed': 2}, {'id': 'test-2', 'index': 2, 'seed': 1000002}]
    """
    return [_seed_split(name, kind, seeds) for name, (kind, seeds) in splits.items()]


def _seed_split(name: str, kind: SplitType, seeds: range) -> TaskSplit:
    def spec(index: int, seed: int) -> dict[str, Any]:
        return {"id": f"{name}-{index}", "index": index, "seed": seed}

    return TaskSplit(name, kind, seeds, spec, lambda seed: {"seed": seed})


def listed_split(name: str, kind: SplitType, tasks: Sequence[Any], option: str,
                 describe: Callable[[Any], dict[str, Any]] | None = None) -> TaskSplit:
    """A split of listed tasks (words, dataset rows, task folders): task ``i`` resets with ``{option: tasks[i]}``.

    >>> listed_split("test", "test", ["crane", "slate"], "task").spec(1)
    {'id': 'test-1', 'index': 1, 'task': 'slate'}
    """
    def spec(index: int, task: Any) -> dict[str, Any]:
        return {"id": f"{name}-{index}", "index": index, **(describe(task) if describe else {option: task})}

    return TaskSplit(name, kind, tasks, spec, lambda task: {option: task})


def find_split(splits: Sequence[TaskSplit], name: str) -> TaskSplit:
    """The split called ``name``.

    Raises:
        UnknownSplit: no split has that name (the message lists the ones there are).
    """
    for split in splits:
        if split.name == name:
            return split
    raise UnknownSplit(f"unknown split {name!r}; this env's splits: {', '.join(s.name for s in splits) or 'none'}")
