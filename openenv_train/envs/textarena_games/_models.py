"""Wire models of the TextArena games, shaped like OpenEnv's ``textarena_env``."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ...core import Action, Observation, State

__all__ = ["TextArenaAction", "TextArenaObservation", "TextArenaState"]


class TextArenaAction(Action):
    """One move as text, in the game's bracket format (``[A C]``, ``[up]``, ``[3 4 7]``)."""

    message: str = Field(default="", max_length=10_000, description="The move; the game's prompt gives its format.")


class TextArenaObservation(Observation):
    """The game's text since the last move, and the opening prompt."""

    prompt: str = Field(default="", description="The game's opening text: rules, move format and the first board.")
    text: str = Field(default="", description="What the game said after this move (feedback and the board).")
    invalid_move: bool = Field(default=False, description="True when TextArena rejected the move.")
    reason: str = Field(default="", description="At the end: why the game ended (TextArena's reason).")


class TextArenaState(State):
    """Episode state: the game id and TextArena's end-of-game info."""

    env_id: str = ""
    seed: int | None = None
    game_info: dict[str, Any] = Field(default_factory=dict, description="TextArena's game_info at the end.")
