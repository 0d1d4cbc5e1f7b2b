"""MiniWoB++ task names: every page the ``miniwob`` package ships, and the mix solvable without pixel coordinates."""

from __future__ import annotations

from functools import cache

from ...core import did_you_mean
from ._browser import miniwob_html_dir

__all__ = ["SOLVABLE_TASKS", "check_task", "task_names"]

#: Tasks an agent solves from the goal and the accessibility tree alone (no pixel coordinates, no drawing);
#: the tests solve each one with a scripted policy. ``browser`` draws its task from these by seed.
SOLVABLE_TASKS: tuple[str, ...] = (
    "click-button", "click-button-sequence", "click-checkboxes", "click-link", "click-option", "click-tab",
    "click-dialog", "click-collapsible", "enter-text", "enter-text-2", "enter-password", "login-user",
    "choose-list", "focus-text", "focus-text-2", "navigate-tree", "use-autocomplete",
)


@cache
def task_names() -> tuple[str, ...]:
    """Every MiniWoB task page in the installed ``miniwob`` package, sorted."""
    return tuple(sorted(p.stem for p in (miniwob_html_dir() / "miniwob").glob("*.html")))


def check_task(task: str) -> str:
    """``task`` if the package ships it.

    Raises:
        ValueError: no such task; the message suggests close names and lists the solvable ones.
    """
    names = task_names()
    if task not in names:
        hint = did_you_mean(task, names)
        raise ValueError(f"no MiniWoB task {task!r}{hint or '.'} Tasks without pixel coordinates: {', '.join(SOLVABLE_TASKS)}")
    return task
