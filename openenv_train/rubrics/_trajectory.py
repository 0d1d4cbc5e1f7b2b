"""Trajectory rubrics: score a whole episode and assign the credit to its steps.

Credit assignment (``RubricResult.step_rewards``, one per env step of the row):

- ``"final"``: the whole score on the last step, 0.0 elsewhere;
- ``"discounted"``: step ``t`` of ``T`` gets ``score * gamma ** (T - 1 - t)`` (exponential discounting back
  from the end);
- ``"env"``: the env's own per-step rewards (None counts as 0.0); the total is their sum unless a rubric
  gives the episode score.

>>> from openenv_train.trace import EnvInfo, EnvStep, TraceRow
>>> row = TraceRow(env=EnvInfo(name="x"), steps=[EnvStep(reward=0.0), EnvStep(reward=0.5), EnvStep(reward=1.0)])
>>> credit_steps(row, 1.0, "discounted", gamma=0.5)
[0.25, 0.5, 1.0]
>>> TrajectoryRubric(credit="env")(row).step_rewards
[0.0, 0.5, 1.0]
"""

from __future__ import annotations

from typing import Any, Literal

from ..trace import TraceRow
from ._base import Rubric, RubricResult

__all__ = ["Credit", "TrajectoryRubric", "credit_steps"]

Credit = Literal["final", "discounted", "env"]


def credit_steps(row: TraceRow, score: float | None, credit: Credit, *, gamma: float = 0.99) -> list[float]:
    """Per-step rewards of ``row`` that carry ``score`` by the ``credit`` rule (see the module docstring)."""
    n = len(row.steps)
    if credit == "env":
        return [float(step.reward or 0.0) for step in row.steps]
    if n == 0 or score is None:
        return [0.0] * n
    if credit == "final":
        return [0.0] * (n - 1) + [score]
    if credit == "discounted":
        return [score * gamma ** (n - 1 - t) for t in range(n)]
    raise ValueError(f"credit must be 'final', 'discounted' or 'env', got {credit!r}")


class TrajectoryRubric(Rubric):
    """Score the episode with ``rubric`` (default: the row's env rewards) and assign it to the steps.

    Args:
        rubric: what scores the whole episode; None uses the sum of the env's step rewards.
        credit: ``"final"``, ``"discounted"`` or ``"env"``.
        gamma: the discount of ``"discounted"``, in (0, 1].
    """

    def __init__(self, rubric: Rubric | None = None, *, credit: Credit = "final", gamma: float = 0.99,
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name or (f"{rubric.name}_trajectory" if rubric else "episode"), **kwargs)
        if credit not in ("final", "discounted", "env"):
            raise ValueError(f"credit must be 'final', 'discounted' or 'env', got {credit!r}")
        if not 0 < gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], got {gamma}")
        self.rubric, self.credit, self.gamma = rubric, credit, gamma

    @property
    def children(self) -> list[Rubric]:
        return [self.rubric] if self.rubric is not None else []

    async def evaluate(self, row: TraceRow) -> RubricResult:
        if self.rubric is None:
            rewards = [s.reward for s in row.steps if s.reward is not None]
            total = sum(rewards) if rewards else row.reward
            inner = RubricResult(total, {})
        else:
            inner = await self.rubric.ascore(row)
            total = inner.total
        steps = credit_steps(row, total, self.credit, gamma=self.gamma)
        return RubricResult(total, {**inner.components, self.name: total}, dict(inner.errors), steps)
