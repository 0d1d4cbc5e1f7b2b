"""The terminal env: a tmux terminal in the OS sandbox; keystrokes as actions, the screen as observation."""

from ._env import TerminalEnvironment, terminal_limits
from ._models import TerminalAction, TerminalObservation, TerminalState
from ._session import TerminalDied, TerminalSession
from ._tasks import TerminalTask, bundled_terminal_tasks, pick_terminal_task
from .client import TerminalEnv

__all__ = [
    "TerminalAction",
    "TerminalDied",
    "TerminalEnv",
    "TerminalEnvironment",
    "TerminalObservation",
    "TerminalSession",
    "TerminalState",
    "TerminalTask",
    "bundled_terminal_tasks",
    "pick_terminal_task",
    "terminal_limits",
]
