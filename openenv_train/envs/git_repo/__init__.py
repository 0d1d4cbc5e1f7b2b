"""The git env: a task on a real repository in the OS sandbox; a submit checks the repository's state."""

from ._env import GIT_ENV, GitEnvironment
from ._models import CheckResult, GitAction, GitObservation, GitState
from ._tasks import GitTask, RepoCheck, bundled_git_tasks, choose_git_task
from .client import GitEnv

__all__ = [
    "GIT_ENV",
    "CheckResult",
    "GitAction",
    "GitEnv",
    "GitEnvironment",
    "GitObservation",
    "GitState",
    "GitTask",
    "RepoCheck",
    "bundled_git_tasks",
    "choose_git_task",
]
