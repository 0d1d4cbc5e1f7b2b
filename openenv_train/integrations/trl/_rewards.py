"""Reward functions for GRPOTrainer: rubrics (with weights) and the reward fields a ``rollout_func`` returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...rubrics import Rubric, get_rubric, reward_function

__all__ = ["field_reward", "rubric_rewards"]


def field_reward(name: str = "env") -> Any:
    """A reward function that returns the rollout's ``reward_<name>`` field (e.g. the env's own reward).

    >>> field_reward("env")(["p"], ["c"], reward_env=[1.0])
    [1.0]
    """
    key = f"reward_{name}"

    def reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        values = kwargs.get(key)
        if values is None:
            raise KeyError(f"no {key!r} field reached the reward function; it comes from make_rollout_func's output "
                           f"(fields there: {sorted(k for k in kwargs if k.startswith('reward_'))})")
        return [None if v is None else float(v) for v in values]

    reward.__name__ = name
    return reward


def rubric_rewards(rubrics: Mapping[str, float] | Sequence[str | Rubric], *,
                   row_column: str = "trace_row") -> tuple[list[Any], list[float]]:
    """Reward functions and their weights, for ``GRPOTrainer(reward_funcs=...)`` and ``GRPOConfig(reward_weights=...)``.

    Args:
        rubrics: ``{"wordle": 1.0, "wordle#greens": 0.5}`` (a rubric name, optionally ``#component``, to its
            weight), or a list of names/rubrics (weight 1 each).
        row_column: the keyword carrying each item's trace row (``make_rollout_func`` sends ``trace_row``).

    Raises:
        ValueError: a negative or non-finite weight, or nothing given.
    """
    items: list[tuple[str | Rubric, float]] = (
        [(k, float(w)) for k, w in rubrics.items()] if isinstance(rubrics, Mapping) else [(r, 1.0) for r in rubrics])
    if not items:
        raise ValueError("give at least one rubric, e.g. rubric_rewards({'wordle': 1.0})")
    funcs, weights = [], []
    for spec, weight in items:
        if not weight >= 0 or weight == float("inf"):
            raise ValueError(f"weight of {spec!r} must be a finite number >= 0, got {weight}")
        component = None
        if isinstance(spec, str):
            name, _, component_name = spec.partition("#")
            component = component_name or None
            rubric = get_rubric(name)
        else:
            rubric = spec
        func = reward_function(rubric, row_column=row_column, component=component)
        if component:
            func.__name__ = f"{getattr(rubric, 'name', 'rubric')}_{component}"
        funcs.append(func)
        weights.append(weight)
    return funcs, weights
