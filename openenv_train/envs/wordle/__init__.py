"""The wordle environment: OpenEnv's TextArena ``Wordle-v0``, plus a scripted expert solver."""

from ._env import WordleEnvironment
from ._models import WordleAction, WordleMessage, WordleObservation, WordleRewardSignals, WordleState
from ._rules import extract_guess, feedback, partial_score
from ._words import answers, valid_guesses
from .client import WordleEnv
from .solver import WordleSolver

__all__ = [
    "WordleAction",
    "WordleEnv",
    "WordleEnvironment",
    "WordleMessage",
    "WordleObservation",
    "WordleRewardSignals",
    "WordleSolver",
    "WordleState",
    "answers",
    "extract_guess",
    "feedback",
    "partial_score",
    "valid_guesses",
]
