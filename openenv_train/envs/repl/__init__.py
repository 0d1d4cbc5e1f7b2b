"""The repl env: a persistent Python session in the OS sandbox; ``FINAL(answer)`` answers a question."""

from ._answers import answers_match, normalise
from ._env import ReplEnvironment
from ._models import ReplAction, ReplObservation, ReplState
from ._questions import ReplQuestion, bundled_questions, choose_question
from .client import ReplEnv

__all__ = [
    "ReplAction",
    "ReplEnv",
    "ReplEnvironment",
    "ReplObservation",
    "ReplQuestion",
    "ReplState",
    "answers_match",
    "bundled_questions",
    "choose_question",
    "normalise",
]
