"""The Wordle env's typed client."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import WordleAction, WordleObservation, WordleState

__all__ = ["WordleEnv"]


class WordleEnv(TypedEnvClient[WordleAction, WordleObservation, WordleState], env="wordle"):
    """Client of the Wordle env: ``await env.step(WordleAction(message="[crane]"))``."""
