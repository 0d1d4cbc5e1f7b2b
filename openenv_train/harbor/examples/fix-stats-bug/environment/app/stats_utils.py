"""Small statistics helpers (the median has a bug for an even number of values)."""

from __future__ import annotations

from collections.abc import Sequence


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean; ValueError for no values."""
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(values: Sequence[float]) -> float:
    """The middle value of the sorted values (the mean of the two middle ones for an even count)."""
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]
