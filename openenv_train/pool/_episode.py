"""What an episode is asked to do (EpisodeSpec), and groups of episodes that share a task and seed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EpisodeSpec", "make_groups"]


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode to run.

    Args:
        episode_id: unique within the run; the key of exactly-once writing and of resume.
        task: the task/prompt spec, also passed to ``reset`` as options (e.g. ``{"task": "crane"}``).
        seed: passed to ``reset(seed=...)``; every episode of a group gets the same one.
        group_id: the group (rollouts of one task, for GRPO); None for a lone episode.
    """

    episode_id: str
    task: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    group_id: str | None = None

    def reset_options(self) -> dict[str, Any]:
        """``reset`` keyword arguments: the task's options plus ``seed``.

        >>> EpisodeSpec("e", {"task": "crane"}, seed=3).reset_options()
        {'task': 'crane', 'seed': 3}
        """
        options = dict(self.task)
        if self.seed is not None:
            options["seed"] = self.seed
        return options


def make_groups(tasks: Iterable[Mapping[str, Any] | int], num_generations: int = 1, *, seed: int = 0,
                prefix: str = "g") -> list[EpisodeSpec]:
    """``num_generations`` episodes per task, sharing ``group_id`` and seed.

    A task is a mapping of reset options (its ``seed`` key, if any, is used as the group's seed) or an int
    seed. Groups without a seed get ``seed + index``.

    >>> [(s.episode_id, s.group_id, s.seed) for s in make_groups([{"task": "crane"}, 7], 2)]
    [('g0-0', 'g0', 0), ('g0-1', 'g0', 0), ('g1-0', 'g1', 7), ('g1-1', 'g1', 7)]

    Raises:
        ValueError: ``num_generations`` < 1.
    """
    if num_generations < 1:
        raise ValueError(f"num_generations must be >= 1, got {num_generations}")
    specs = []
    for index, task in enumerate(tasks):
        options = {"seed": task} if isinstance(task, int) else dict(task)
        group_seed = options.pop("seed", seed + index)
        group_id = f"{prefix}{index}"
        specs += [EpisodeSpec(f"{group_id}-{k}", options, group_seed, group_id) for k in range(num_generations)]
    return specs
