"""Means with 95% bootstrap confidence intervals, for one policy and for the paired difference of two."""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["bootstrap_ci", "paired_difference"]


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def bootstrap_ci(values: Sequence[float], *, resamples: int = 2000, seed: int = 0,
                 level: float = 0.95) -> dict[str, float]:
    """``{"mean", "ci_low", "ci_high", "n"}``: the mean and its percentile bootstrap interval.

    >>> bootstrap_ci([1.0, 1.0, 1.0])
    {'mean': 1.0, 'ci_low': 1.0, 'ci_high': 1.0, 'n': 3}
    """
    if not values:
        raise ValueError("no values to summarise: the evaluation produced no episodes")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    return {"mean": sum(values) / n, "ci_low": _percentile(means, tail), "ci_high": _percentile(means, 1 - tail),
            "n": n}


def paired_difference(after: Sequence[float], before: Sequence[float], **kwargs: float) -> dict[str, float]:
    """Mean of ``after[i] - before[i]`` (the same tasks, evaluated twice) with its bootstrap interval.

    >>> paired_difference([1.0, 0.5], [0.0, 0.5])["mean"]
    0.5
    """
    if len(after) != len(before):
        raise ValueError(f"paired evaluations differ in size: {len(after)} vs {len(before)} tasks")
    return bootstrap_ci([a - b for a, b in zip(after, before, strict=True)], **kwargs)  # type: ignore[arg-type]
