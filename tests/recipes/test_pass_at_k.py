"""pass@k (Chen et al. 2021) against a brute force over every k-subset, its edges, and the summary over tasks."""

from __future__ import annotations

import itertools
import math

import pytest

from openenv_train.recipes import pass_at_k, pass_at_k_summary, report_ks, task_pass_at_k


def _brute(n: int, c: int, k: int) -> float:
    """The share of k-subsets of n samples (the first c successes) that hold at least one success."""
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(i < c for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_matches_brute_force_over_k_subsets(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(_brute(n, c, k), abs=1e-12)
            assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)


def test_edges() -> None:
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 5) == 1.0
    assert pass_at_k(10, 1, 10) == 1.0  # k = n: any success is in the one subset
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert 0.0 <= pass_at_k(200, 1, 100) <= 1.0 and pass_at_k(200, 1, 100) == pytest.approx(0.5)  # stable at large n
    with pytest.raises(ValueError, match="pass@5 needs at least k samples per task, got n=4"):
        pass_at_k(4, 1, 5)
    with pytest.raises(ValueError, match="k must be in 1..4"):
        pass_at_k(4, 1, 0)
    with pytest.raises(ValueError, match="successes must be in 0..4"):
        pass_at_k(4, 5, 1)


def test_report_ks() -> None:
    assert report_ks(1) == [1] and report_ks(2) == [1, 2] and report_ks(16) == [1, 2, 4, 8, 16]


def test_task_and_summary() -> None:
    assert task_pass_at_k([True, False], [1.0, 0.5]) == {"pass@1": 0.5, "pass@2": 1.0, "mean@2": 0.75}
    summary = pass_at_k_summary([[True, True], [False, True], [False, False]], resamples=200)
    assert summary["pass@1"]["mean"] == pytest.approx(0.5) and summary["pass@2"]["mean"] == pytest.approx(2 / 3)
    assert summary["mean@2"]["mean"] == pytest.approx(0.5) and summary["pass@2"]["n"] == 3
    assert summary["pass@2"]["ci_low"] <= summary["pass@2"]["mean"] <= summary["pass@2"]["ci_high"]
    with pytest.raises(ValueError, match="same number of samples"):
        pass_at_k_summary([[True], [True, False]])
    with pytest.raises(ValueError, match="same number of samples"):
        pass_at_k_summary([])
    with pytest.raises(ValueError, match="k must be in 1..2"):
        pass_at_k_summary([[True, False]], ks=[3])
