"""pass@k and mean@k of n samples per task (Chen et al. 2021), with bootstrap intervals over tasks."""

from __future__ import annotations

from collections.abc import Sequence

from ._stats import bootstrap_ci

__all__ = ["pass_at_k", "pass_at_k_summary", "report_ks", "task_pass_at_k"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of P(at least one of k samples succeeds) from ``c`` successes in ``n`` samples:
    ``1 - C(n-c, k) / C(n, k)``, as the product ``prod_{i=n-c+1..n} (1 - k/i)`` (no huge binomials).

    >>> pass_at_k(4, 1, 2)
    0.5

    Raises:
        ValueError: ``k`` outside 1..n, or ``c`` outside 0..n.
    """
    if not 0 <= c <= n:
        raise ValueError(f"successes must be in 0..{n} (the samples), got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be in 1..{n}: pass@{k} needs at least k samples per task, got n={n}")
    if n - c < k:  # every k-subset holds a success
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def report_ks(n: int) -> list[int]:
    """The k reported for n samples: 1, the powers of two below n, and n.

    >>> report_ks(8), report_ks(5)
    ([1, 2, 4, 8], [1, 2, 4, 5])
    """
    return sorted({1, n, *(2 ** i for i in range(n.bit_length()) if 2 ** i < n)})


def task_pass_at_k(successes: Sequence[bool], rewards: Sequence[float] | None = None, *,
                   ks: Sequence[int] | None = None) -> dict[str, float]:
    """One task's ``{"pass@k": ..., "mean@n": ...}`` from its n samples; mean@n is their mean reward (without
    ``rewards``, their success rate).

    >>> task_pass_at_k([True, False, False, False], ks=[1, 2])
    {'pass@1': 0.25, 'pass@2': 0.5, 'mean@4': 0.25}
    """
    n = len(successes)
    values = list(rewards) if rewards is not None else [float(s) for s in successes]
    if len(values) != n:
        raise ValueError(f"{len(values)} rewards for {n} samples")
    out = {f"pass@{k}": pass_at_k(n, sum(successes), k) for k in (ks or report_ks(n))}
    out[f"mean@{n}"] = sum(values) / n
    return out


def pass_at_k_summary(successes: Sequence[Sequence[bool]], rewards: Sequence[Sequence[float]] | None = None, *,
                      ks: Sequence[int] | None = None, resamples: int = 2000,
                      seed: int = 0) -> dict[str, dict[str, float]]:
    """``{"pass@k": ci, ..., "mean@n": ci}``: :func:`task_pass_at_k` of each task (one list of n samples per task,
    the same n for all), averaged over tasks with its bootstrap interval (:func:`bootstrap_ci`).

    >>> pass_at_k_summary([[True, False], [False, False]], ks=[2])["pass@2"]["mean"]
    0.5

    Raises:
        ValueError: no tasks, tasks of different sample counts, or a k outside 1..n.
    """
    sizes = {len(s) for s in successes}
    if len(sizes) != 1:
        raise ValueError(f"every task needs the same number of samples, got {sorted(sizes) or 'no tasks'}")
    per_task = [task_pass_at_k(task, rewards[i] if rewards is not None else None, ks=ks)
                for i, task in enumerate(successes)]
    return {name: bootstrap_ci([t[name] for t in per_task], resamples=resamples, seed=seed) for name in per_task[0]}
