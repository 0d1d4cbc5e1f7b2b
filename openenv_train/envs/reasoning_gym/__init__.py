"""The reasoning_gym environment: questions from the ``reasoning-gym`` package, scored by its score_answer."""

from ._env import ReasoningGymEnvironment
from ._models import ReasoningGymAction, ReasoningGymObservation, ReasoningGymState

__all__ = ["ReasoningGymAction", "ReasoningGymEnvironment", "ReasoningGymObservation", "ReasoningGymState"]
