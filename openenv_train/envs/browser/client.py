"""Typed clients of the browser env: ``BrowserEnv`` (the task mix) and one class per ``browser/<task>`` entry."""

from __future__ import annotations

import functools

from ...client import TypedEnvClient
from ._models import BrowserAction, BrowserObservation, BrowserState

__all__ = ["BrowserEnv", "task_client"]


class BrowserEnv(TypedEnvClient[BrowserAction, BrowserObservation, BrowserState], env="browser"):
    """Client of the browser env: ``await env.step(BrowserAction(action_str="click('13')"))``."""


@functools.cache
def task_client(task: str) -> type[BrowserEnv]:
    """The client class of ``browser/<task>`` (``ClickButtonBrowserEnv`` for click-button)."""
    name = "".join(part.capitalize() for part in task.split("-")) + "BrowserEnv"
    return type(name, (BrowserEnv,), {"__doc__": f"Client of browser/{task}.", "__module__": "openenv_train.envs.browser"},
                env=f"browser/{task}")
