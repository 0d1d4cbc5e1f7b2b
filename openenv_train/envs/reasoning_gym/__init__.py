"""The reasoning_gym environment: questions from the ``reasoning-gym`` package, scored by its score_answer."""

from ._datasets import DEFAULT_DATASET, make_question, score_answer
from ._env import ReasoningGymEnvironment
from ._models import ReasoningGymAction, ReasoningGymObservation, ReasoningGymState
from .client import ReasoningGymEnv

__all__ = [
    "DEFAULT_DATASET",
    "ReasoningGymAction",
    "ReasoningGymEnv",
    "ReasoningGymEnvironment",
    "ReasoningGymObservation",
    "ReasoningGymState",
    "make_question",
    "score_answer",
]
