"""The coding env: write Python in the OS sandbox; a submit runs hidden unit tests (reward: fraction passed)."""

from ..run_limits import RunLimits, RunObservation
from ._env import CodingEnvironment
from ._grader import CaseResult
from ._models import CodingAction, CodingObservation, CodingState
from ._tasks import CodingTask, HiddenTest, bundled_tasks, choose_task
from .client import CodingEnv

__all__ = [
    "CaseResult",
    "CodingAction",
    "CodingEnv",
    "CodingEnvironment",
    "CodingObservation",
    "CodingState",
    "CodingTask",
    "HiddenTest",
    "RunLimits",
    "RunObservation",
    "bundled_tasks",
    "choose_task",
]
