"""Composition of rubrics: weighted sum, sequential fail-fast, gate, max/min, and a components container.

Every composite reports its children's components as well as its own total under its name, so a trained or
evaluated number can always be traced back to the parts it came from. Children run concurrently (async and
sync ones alike) except in :class:`Sequential`, which stops at the first failing child.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..trace import TraceRow
from ._base import Rubric, RubricResult

__all__ = ["Components", "Gate", "Max", "Min", "Sequential", "WeightedSum"]


class _Composite(Rubric):
    def __init__(self, rubrics: Sequence[Rubric], name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        if not rubrics:
            raise ValueError(f"{type(self).__name__} needs at least one rubric")
        names = [r.name for r in rubrics]
        if len(set(names)) != len(names):
            raise ValueError(f"rubric names must be unique within {self.name!r}, got {names}; pass name=... to each")
        self.rubrics = list(rubrics)

    @property
    def children(self) -> list[Rubric]:
        return list(self.rubrics)

    async def _all(self, row: TraceRow) -> list[RubricResult]:
        return list(await asyncio.gather(*(r.ascore(row) for r in self.rubrics)))

    def _merge(self, total: float | None, results: Sequence[RubricResult]) -> RubricResult:
        components: dict[str, float | None] = {}
        errors: dict[str, str] = {}
        steps: list[float] | None = None
        for result in results:
            components.update(result.components)
            errors.update(result.errors)
            steps = steps or result.step_rewards
        components[self.name] = total
        return RubricResult(total, components, errors, steps)

    def score(self, row: TraceRow) -> Any:  # composites build their result in evaluate()
        raise TypeError(f"{type(self).__name__} is scored through ascore()/__call__, not score()")


class WeightedSum(_Composite):
    """``sum(weight * score)`` over the children; weight 0 logs a component without counting it.

    Children that score None are left out; the total is None when every weighted child is None.

    Args:
        rubrics: the children.
        weights: one per child (need not sum to 1); default all 1.0.
    """

    def __init__(self, rubrics: Sequence[Rubric], weights: Sequence[float] | None = None, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(rubrics, name, **kwargs)
        self.weights = [1.0] * len(self.rubrics) if weights is None else [float(w) for w in weights]
        if len(self.weights) != len(self.rubrics):
            raise ValueError(f"{len(self.weights)} weights for {len(self.rubrics)} rubrics; give one weight per rubric")

    async def evaluate(self, row: TraceRow) -> RubricResult:
        results = await self._all(row)
        terms = [w * r.total for w, r in zip(self.weights, results, strict=True) if w != 0 and r.total is not None]
        return self._merge(sum(terms) if terms else None, results)


class Components(WeightedSum):
    """A container that reports every named component and their (weighted) total under ``name``."""

    def __init__(self, rubrics: Sequence[Rubric], weights: Sequence[float] | None = None, name: str = "total",
                 **kwargs: Any) -> None:
        super().__init__(rubrics, weights, name, **kwargs)


class Sequential(_Composite):
    """Run children in order; stop at the first that errs or scores below ``threshold`` (fail-fast).

    The total is the last score reached (0.0 when a child failed); children not reached report None.
    """

    def __init__(self, rubrics: Sequence[Rubric], threshold: float = 0.0, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(rubrics, name, **kwargs)
        self.threshold = threshold

    async def evaluate(self, row: TraceRow) -> RubricResult:
        results: list[RubricResult] = []
        total: float | None = None
        for rubric in self.rubrics:
            result = await rubric.ascore(row)
            results.append(result)
            total = result.total
            if result.errors or (total is not None and total < self.threshold):
                total = 0.0
                break
        skipped = [RubricResult(None, {r.name: None}) for r in self.rubrics[len(results):]]
        return self._merge(total, [*results, *skipped])


class Gate(_Composite):
    """``then``'s score when ``gate`` scores at least ``threshold``, else ``otherwise`` (default 0.0)."""

    def __init__(self, gate: Rubric, then: Rubric, threshold: float = 1.0, otherwise: float | None = 0.0,
                 name: str | None = None, **kwargs: Any) -> None:
        super().__init__([gate, then], name, **kwargs)
        self.threshold, self.otherwise = threshold, otherwise

    async def evaluate(self, row: TraceRow) -> RubricResult:
        gate, then = await self._all(row)
        opened = gate.total is not None and gate.total >= self.threshold and not gate.errors
        return self._merge(then.total if opened else self.otherwise, [gate, then])


class Max(_Composite):
    """The highest child score (None scores ignored)."""

    async def evaluate(self, row: TraceRow) -> RubricResult:
        results = await self._all(row)
        scores = [r.total for r in results if r.total is not None]
        return self._merge(max(scores) if scores else None, results)


class Min(_Composite):
    """The lowest child score (None scores ignored)."""

    async def evaluate(self, row: TraceRow) -> RubricResult:
        results = await self._all(row)
        scores = [r.total for r in results if r.total is not None]
        return self._merge(min(scores) if scores else None, results)
