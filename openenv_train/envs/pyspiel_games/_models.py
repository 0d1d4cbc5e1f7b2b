"""The observation of a pyspiel game: OpenEnv openspiel_env's fields plus a text board and action names."""

from __future__ import annotations

from pydantic import Field

from ..python_games import OpenSpielObservation

__all__ = ["SpielObservation"]


class SpielObservation(OpenSpielObservation):
    """What the agent sees at its turn (or the end): tensors, a text board and the legal actions by name."""

    board: str = Field(
        default="",
        description="A text rendering: the full board in perfect-information games, else the agent's own view.",
    )
    legal_action_names: list[str] = Field(
        default_factory=list, description="pyspiel's action_to_string of each legal action, in the same order."
    )
    returns: list[float] | None = Field(default=None, description="Every player's return, once the game is over.")
