"""Typed clients of the browser env: ``BrowserEnv`` (the task mix) and one class per ``browser/<task>`` entry."""

from __future__ import annotations

import functools

from ...client import TypedEnvClient
from ..family_clients import camel, family_client
from ._models import BrowserAction, BrowserObservation, BrowserState

__all__ = ["BrowserEnv", "task_client"]


class BrowserEnv(TypedEnvClient[BrowserAction, BrowserObservation, BrowserState], env="browser"):
    """Client of the browser env: ``await env.step(BrowserAction(action_str="click('13')"))``."""


@functools.cache
def task_client(task: str) -> type[BrowserEnv]:
    """The client class of ``browser/<task>`` (``ClickButtonBrowserEnv`` for click-button)."""
    return family_client(BrowserEnv, f"browser/{task}", camel(task, "-") + "BrowserEnv", "openenv_train.envs.browser")
