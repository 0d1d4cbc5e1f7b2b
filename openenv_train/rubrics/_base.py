"""The Rubric base: a named scorer of trace rows, sync or async, with hooks, reset and error capture.

A rubric's :meth:`Rubric.score` takes a :class:`~openenv_train.trace.TraceRow` and returns a float, None
(not applicable) or an awaitable of one. :meth:`Rubric.ascore` runs it and returns a :class:`RubricResult`
(the total, every named component, errors, optional per-step rewards); :meth:`Rubric.__call__` does the same
from sync code, also inside a running event loop (it then runs on a private loop in a worker thread).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ..trace import TraceRow

__all__ = ["FunctionRubric", "Hook", "Rubric", "RubricResult", "run_sync"]

T = TypeVar("T")
Score = float | None
#: Called after a rubric scores a row: ``hook(rubric, row, result)``.
Hook = Callable[["Rubric", TraceRow, "RubricResult"], None]


@dataclass
class RubricResult:
    """What scoring one row gave: the total, each named component, errors by component, step rewards."""

    total: float | None
    components: dict[str, float | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    step_rewards: list[float] | None = None


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, even when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="rubric-sync", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def _as_score(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"rubric {name!r} returned {value!r}; a score is a float or None")
    return float(value)


class Rubric:
    """Base of every rubric: override :meth:`score` (sync or async) and, for composites, :attr:`children`.

    Args:
        name: The component name the score is reported under (default: the class name in snake case).
        on_error: ``"record"`` (an exception becomes the component's error and scores 0.0) or ``"raise"``
            (it propagates through every enclosing rubric).
    """

    def __init__(self, name: str | None = None, *, on_error: Literal["record", "raise"] = "record") -> None:
        if on_error not in ("record", "raise"):
            raise ValueError(f"on_error must be 'record' or 'raise', got {on_error!r}")
        self.name = name or _snake(type(self).__name__)
        self.on_error = on_error
        self.hooks: list[Hook] = []

    @property
    def children(self) -> list[Rubric]:
        """The rubrics this one combines (none for a leaf)."""
        return []

    def score(self, row: TraceRow) -> Score | Awaitable[Score]:
        """The score of one row: a float, None (not applicable), or an awaitable of one."""
        raise NotImplementedError(f"{type(self).__name__} must implement score(row)")

    def reset(self) -> None:
        """Forget per-run state, here and in every child (override :meth:`on_reset` for your own)."""
        for child in self.children:
            child.reset()
        self.on_reset()

    def on_reset(self) -> None:
        """Hook for subclasses with state (counters, caches); called by :meth:`reset`."""

    def add_hook(self, hook: Hook) -> None:
        """Call ``hook(rubric, row, result)`` after this rubric and every nested rubric scores a row."""
        self.hooks.append(hook)
        for child in self.children:
            child.add_hook(hook)

    def walk(self) -> list[Rubric]:
        """This rubric and every nested one, depth first."""
        return [self, *(r for child in self.children for r in child.walk())]

    @property
    def component_names(self) -> list[str]:
        """The names its results report scores under (``RubricResult.components``): this rubric's and every
        nested one's, depth first (a composite's total goes under its own name)."""
        return [r.name for r in self.walk()]

    async def evaluate(self, row: TraceRow) -> RubricResult:
        """Score ``row`` and build the result (composites override this; errors propagate)."""
        value = self.score(row)
        if inspect.isawaitable(value):
            value = await value
        score = _as_score(value, self.name)
        return RubricResult(score, {self.name: score})

    async def ascore(self, row: TraceRow) -> RubricResult:
        """Score one row: the total, the named components, errors (see ``on_error``); then run the hooks."""
        try:
            result = await self.evaluate(row)
        except Exception as exc:
            if self.on_error == "raise" or getattr(exc, "_rubric_raise", False):
                exc._rubric_raise = True  # type: ignore[attr-defined]  # parents let it through
                raise
            result = RubricResult(0.0, {self.name: 0.0}, {self.name: f"{type(exc).__name__}: {exc}"})
        for hook in self.hooks:
            hook(self, row, result)
        return result

    def __call__(self, row: TraceRow) -> RubricResult:
        """:meth:`ascore` from sync code (safe inside a running event loop)."""
        return run_sync(self.ascore(row))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class FunctionRubric(Rubric):
    """A rubric from a plain function ``fn(row) -> float | None`` (or an async one)."""

    def __init__(self, fn: Callable[[TraceRow], Any], name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name or fn.__name__, **kwargs)
        self.fn = fn

    def score(self, row: TraceRow) -> Any:
        return self.fn(row)


def _snake(name: str) -> str:
    out = "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
    return out.removesuffix("_rubric") or "rubric"
