"""The wordle environment: OpenEnv's TextArena ``Wordle-v0``, plus a scripted expert solver."""

from ._env import WordleEnvironment
from ._models import WordleAction, WordleMessage, WordleObservation, WordleRewardSignals, WordleState
from ._rules import extract_guess, feedback, partial_score
from ._words import SPLIT_SEED_ENV, answer_splits, answers, valid_guesses
from .client import WordleEnv
from .solver import WordleSolver

__all__ = [
    "SPLIT_SEED_ENV",
    "WordleAction",
    "WordleEnv",
    "WordleEnvironment",
    "WordleMessage",
    "WordleObservation",
    "WordleRewardSignals",
    "WordleSolver",
    "WordleState",
    "answer_splits",
    "answers",
    "extract_guess",
    "feedback",
    "partial_score",
    "valid_guesses",
]
