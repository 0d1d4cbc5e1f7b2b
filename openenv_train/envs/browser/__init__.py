"""The browser env family: MiniWoB++ tasks in a real headless Chromium, wire-compatible with browsergym_env.

``BrowserEnvironment`` (catalog ``browser``) draws a task by seed; ``browser/<task>`` entries are its
per-task subclasses, resolved by name here (``ClickButtonBrowserEnvironment`` for ``click-button``).
"""

from typing import Any

from ...core import lazy_attributes
from ._actions import GRAMMAR, ActionError, parse_action
from ._browser import BrowserCrashed, BrowserUnavailable, host
from ._env import BrowserEnvironment, task_environment
from ._models import BrowserAction, BrowserObservation, BrowserState
from ._page import flatten_axtree
from ._tasks import SOLVABLE_TASKS, task_names
from .client import BrowserEnv, task_client

__all__ = [
    "BrowserEnv",
    "GRAMMAR",
    "SOLVABLE_TASKS",
    "ActionError",
    "BrowserAction",
    "BrowserCrashed",
    "BrowserEnvironment",
    "BrowserObservation",
    "BrowserState",
    "BrowserUnavailable",
    "flatten_axtree",
    "host",
    "parse_action",
    "task_client",
    "task_environment",
    "task_names",
]


def _task_class(name: str) -> Any:
    # the per-task env classes of the catalog's browser/<task> entries and their clients, made on first use
    for task in SOLVABLE_TASKS:
        for cls in (task_environment(task), task_client(task)):
            if cls.__name__ == name:
                return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__getattr__, __dir__ = lazy_attributes(__name__, fallback=_task_class)
