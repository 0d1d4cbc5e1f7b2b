"""Wall-time budgets for training phases: a clock, a cosine schedule over it, a trainer callback that stops at it,
and the one console line a phase shows while it runs.

A busy machine then gives a shorter phase, not a longer run: the trainer stops cleanly (its checkpoint and rows
are written as at a normal end) and the summary says the budget cut it short.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

__all__ = ["Budget", "PhaseLine", "budget_callback", "cosine_over_budget", "shown"]


class Budget:
    """``seconds`` of wall time from :meth:`start` (a phase may also end earlier, by its step limit)."""

    def __init__(self, seconds: float) -> None:
        if seconds <= 0:
            raise ValueError(f"a phase budget must be > 0 seconds, got {seconds}")
        self.seconds = float(seconds)
        self._start: float | None = None
        self.cut_short = False

    def start(self) -> None:
        """Start the clock (again: a resumed phase gets its whole budget)."""
        self._start = time.perf_counter()

    @property
    def elapsed(self) -> float:
        """Seconds since :meth:`start` (0 before it)."""
        return 0.0 if self._start is None else time.perf_counter() - self._start

    @property
    def fraction(self) -> float:
        """Share of the budget spent, capped at 1."""
        return min(1.0, self.elapsed / self.seconds)

    @property
    def spent(self) -> bool:
        """Whether the budget is used up."""
        return self._start is not None and self.elapsed >= self.seconds


def cosine_over_budget(optimizer: Any, budget: Budget, *, warmup: float = 0.03, floor: float = 0.05,
                       step_fraction: Callable[[], float] | None = None) -> Any:
    """A ``LambdaLR`` that warms up linearly and then decays on a cosine over the *time* budget (to ``floor`` of
    the peak), so a phase cut by its budget still ends at a low learning rate. ``step_fraction``, when given, is
    the share of the step limit done; the schedule follows whichever of the two is further along."""
    import torch

    def factor(_: int) -> float:
        done = max(budget.fraction, step_fraction() if step_fraction else 0.0)
        if done < warmup:
            return max(done / warmup, 1e-3)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * (done - warmup) / (1 - warmup)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class PhaseLine:
    """One live console line for a phase: its title, a bar over its budget, and its key metrics.

    Args:
        console: where to draw (a non-terminal console prints the final line only).
        title: e.g. ``"SFT"``.
        budget: the phase's budget; the bar shows elapsed / budget seconds.
        keys: metric names to show, in order, with the short labels to show them under.
    """

    def __init__(self, console: Console, title: str, budget: Budget, keys: Mapping[str, str]) -> None:
        self.title, self.budget, self.keys = title, budget, dict(keys)
        self._progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(bar_width=20),
                                  TextColumn("{task.fields[info]}"), console=console, transient=False)
        self._task = self._progress.add_task(title, total=budget.seconds, info="")
        self._values: dict[str, float] = {}
        self.step = 0

    def __enter__(self) -> PhaseLine:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._refresh()
        self._progress.stop()

    def update(self, step: int | None = None, values: Mapping[str, Any] | None = None) -> None:
        """Show progress at ``step`` with the latest ``values`` (other keys are ignored)."""
        if step is not None:
            self.step = step
        for key in self.keys:
            value = (values or {}).get(key)
            if isinstance(value, int | float) and math.isfinite(value):
                self._values[key] = float(value)
        self._refresh()

    def _refresh(self) -> None:
        shown = "  ".join(f"{label} {self._values[k]:.3g}" for k, label in self.keys.items() if k in self._values)
        cut = "  [yellow]budget reached[/]" if self.budget.cut_short else ""
        info = f"step {self.step}  {shown}  {self.budget.elapsed:.0f}/{self.budget.seconds:.0f} s{cut}"
        self._progress.update(self._task, completed=min(self.budget.elapsed, self.budget.seconds), info=info)


def budget_callback(budget: Budget, line: PhaseLine | None = None, *, log_keys: Sequence[str] = ()) -> Any:
    """A transformers ``TrainerCallback``: starts ``budget`` with training, stops training cleanly once it is spent
    (the trainer still saves and returns as at its step limit), and feeds ``line`` with step and logs."""
    from transformers import TrainerCallback

    class _Budget(TrainerCallback):  # type: ignore[misc]
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            budget.start()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if budget.spent and state.global_step < state.max_steps:
                budget.cut_short = True
                control.should_training_stop = True
                control.should_save = True  # the last checkpoint is this step's, as at a normal end
            if line is not None:
                line.update(state.global_step)

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
            if line is not None:
                line.update(state.global_step, logs)

    return _Budget()


def shown(line: PhaseLine, show: bool) -> AbstractContextManager[object]:
    """``line`` drawn while the block runs when ``show`` (the recipes' ``show_progress``), else nothing drawn."""
    return line if show else nullcontext()
