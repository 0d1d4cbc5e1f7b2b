"""Step rubrics: OpenEnv's ``Rubric`` API, scoring one ``(action, observation)`` as an env steps.

Attach one to an environment (``self.rubric = ...`` in ``__init__``, ``_apply_rubric`` in ``step``) exactly as
under OpenEnv; :class:`RubricList` and :class:`RubricDict` hold children for a parent that aggregates them. The
trace-row rubrics of :mod:`openenv_train.rubrics` score whole recorded episodes instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["RubricDict", "RubricList", "StepRubric"]


class StepRubric:
    """A reward of one step: subclasses implement ``forward(action, observation) -> float``.

    Child rubrics assigned as attributes are registered (``named_rubrics``, ``get_rubric``, ``reset`` reach
    them); ``last_score`` keeps the latest score and forward hooks see every one, as in OpenEnv.

    Example:
        >>> class Positive(StepRubric):
        ...     def forward(self, action, observation):
        ...         return 1.0 if observation["value"] > 0 else 0.0
        >>> Positive()(None, {"value": 3})
        1.0
    """

    _children: dict[str, StepRubric]
    _hooks: list[Callable[[StepRubric, Any, Any, float], None]]
    last_score: float | None

    def __init__(self) -> None:
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "_hooks", [])
        object.__setattr__(self, "last_score", None)

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, StepRubric):
            self._children[name] = value
        object.__setattr__(self, name, value)

    def forward(self, action: Any, observation: Any) -> float:
        """The step's score (override it; may be ``async def``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward(action, observation)")

    def __call__(self, action: Any, observation: Any) -> Any:
        """Score a step: a float, or an awaitable of one when ``forward`` is async."""
        result = self.forward(action, observation)
        if inspect.isawaitable(result):
            return self._finish_async(action, observation, result)
        return self._finish(action, observation, result)

    def _finish(self, action: Any, observation: Any, score: float) -> float:
        self.last_score = score
        for hook in self._hooks:
            hook(self, action, observation, score)
        return score

    async def _finish_async(self, action: Any, observation: Any, result: Any) -> float:
        return self._finish(action, observation, await result)

    def register_forward_hook(self, hook: Callable[[StepRubric, Any, Any, float], None]) -> None:
        """Call ``hook(rubric, action, observation, score)`` after every score."""
        self._hooks.append(hook)

    def children(self) -> Iterator[StepRubric]:
        """The direct child rubrics."""
        yield from self._children.values()

    def named_rubrics(self, prefix: str = "") -> Iterator[tuple[str, StepRubric]]:
        """Every descendant with its dotted path (``code.syntax``)."""
        for name, child in self._children.items():
            path = f"{prefix}.{name}" if prefix else name
            yield path, child
            yield from child.named_rubrics(path)

    def get_rubric(self, path: str) -> StepRubric:
        """The descendant at a dotted path.

        Raises:
            KeyError: no rubric at ``path`` (the message lists the paths there are).
        """
        current = self
        for part in path.split("."):
            if part not in current._children:
                known = [name for name, _ in self.named_rubrics()]
                raise KeyError(f"no rubric at {path!r}; the paths are {known}")
            current = current._children[part]
        return current

    def reset(self) -> None:
        """Clear episode state here and in every child (override :meth:`on_reset` for a rubric's own)."""
        self.on_reset()
        for child in self._children.values():
            child.reset()

    def on_reset(self) -> None:
        """This rubric's own episode state to clear (nothing by default)."""


class RubricList(StepRubric):
    """Children in a list (as ``nn.ModuleList``); it does not score: a parent's ``forward`` picks from it."""

    def __init__(self, rubrics: list[StepRubric] | None = None) -> None:
        super().__init__()
        self._items: list[StepRubric] = []
        for rubric in rubrics or []:
            self.append(rubric)

    def forward(self, action: Any, observation: Any) -> float:
        raise NotImplementedError("RubricList does not score; use it inside a parent rubric whose forward() "
                                  "aggregates its children")

    def append(self, rubric: StepRubric) -> None:
        """Add a rubric (registered as child ``rubric_<index>``)."""
        setattr(self, f"rubric_{len(self._items)}", rubric)
        self._items.append(rubric)

    def extend(self, rubrics: list[StepRubric]) -> None:
        """Add several rubrics."""
        for rubric in rubrics:
            self.append(rubric)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> StepRubric:
        return self._items[index]

    def __iter__(self) -> Iterator[StepRubric]:
        return iter(self._items)


class RubricDict(StepRubric):
    """Children by name (as ``nn.ModuleDict``); it does not score: a parent's ``forward`` picks from it."""

    def __init__(self, rubrics: Mapping[str, StepRubric] | None = None) -> None:
        super().__init__()
        self._by_name: dict[str, StepRubric] = {}
        self.update(rubrics or {})

    def forward(self, action: Any, observation: Any) -> float:
        raise NotImplementedError("RubricDict does not score; use it inside a parent rubric whose forward() "
                                  "picks a child by key")

    def __setitem__(self, key: str, rubric: StepRubric) -> None:
        setattr(self, key, rubric)
        self._by_name[key] = rubric

    def __getitem__(self, key: str) -> StepRubric:
        try:
            return self._by_name[key]
        except KeyError:
            raise KeyError(f"no rubric named {key!r}; the names are {list(self._by_name)}") from None

    def __contains__(self, key: object) -> bool:
        return key in self._by_name

    def __len__(self) -> int:
        return len(self._by_name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def keys(self) -> Iterator[str]:
        """The names."""
        return iter(self._by_name.keys())

    def values(self) -> Iterator[StepRubric]:
        """The rubrics."""
        return iter(self._by_name.values())

    def items(self) -> Iterator[tuple[str, StepRubric]]:
        """``(name, rubric)`` pairs."""
        return iter(self._by_name.items())

    def update(self, rubrics: Mapping[str, StepRubric]) -> None:
        """Add or replace rubrics by name."""
        for name, rubric in rubrics.items():
            self[name] = rubric
