"""Wire types of the Wordle env: OpenEnv's TextArena shapes plus typed fields for training."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ...core import Action, Observation, State
from ._text import ENV_ID

__all__ = ["WordleAction", "WordleMessage", "WordleObservation", "WordleRewardSignals", "WordleState"]

DEFAULT_MAX_GUESSES = 6


class WordleAction(Action):
    """The player's reply; the guess is read from it (see the env's README for the rules).

    ``message`` is required, as in OpenEnv's ``TextArenaAction``: the action schema then names the one field a
    plain-text reply fills (verifiers' ``openenv`` taskset sends ``{required[0]: reply}``), and an action without
    it is refused with the field named instead of played as an empty guess.
    """

    message: str = Field(
        description="Free text holding the guess: its first [xxxxx], else its first five letters.",
    )


class WordleMessage(BaseModel):
    """One transcript entry, shaped like OpenEnv's ``TextArenaMessage``."""

    sender_id: int = Field(description="-1 for the game.")
    content: str
    category: str = Field(description="TextArena's message category, e.g. MESSAGE or PROMPT.")


class WordleRewardSignals(BaseModel):
    """Per-step reward components, the ones OpenEnv's TextArena server reports for Wordle."""

    greens: float = Field(default=0.0, description="Greens of the latest valid guess / 5.")
    yellows: float = Field(default=0.0, description="Yellows of the latest valid guess / 5.")
    repetitions: float = Field(
        default=1.0, description="1 - earlier occurrences of this step's guess: 1.0 new, 0.0 once seen, -1.0 twice.",
    )
    correct: float = Field(default=0.0, description="The step's reward: 1.0 win, partial score at a loss, else 0.0.")

    def as_openenv(self) -> dict[str, float]:
        """The ``wordle.*`` keys under which OpenEnv reports these in ``info.reward_signals``."""
        return {f"wordle.{name}": value for name, value in self.model_dump().items()}


class WordleObservation(Observation):
    """What the player sees: OpenEnv's TextArena fields, then typed conveniences."""

    prompt: str = Field(default="", description="The instructions until the first valid guess, then 'Wordle-v0'.")
    messages: list[WordleMessage] = Field(default_factory=list, description="The transcript, as one GAME message.")
    current_player_id: int = 0
    legal_players: list[int] = Field(default_factory=lambda: [0])
    info: dict[str, Any] = Field(default_factory=dict, description="After a step: {'reward_signals': {wordle.*}}.")
    guesses: list[str] = Field(default_factory=list, description="Valid guesses so far, oldest first.")
    feedback: list[str] = Field(default_factory=list, description="Their feedback, e.g. 'GYXXG'.")
    remaining_guesses: int = DEFAULT_MAX_GUESSES
    greens: int = Field(default=0, description="Greens of the latest valid guess.")
    yellows: int = Field(default=0, description="Yellows of the latest valid guess.")
    reward_signals: WordleRewardSignals = Field(default_factory=WordleRewardSignals)
    invalid_move: str | None = Field(default=None, description="Why this step's move was invalid, if it was.")
    reason: str | None = Field(default=None, description="Why the game ended, once it has.")


class WordleState(State):
    """Episode state; ``secret`` is here for debugging and never in an observation."""

    env_id: str = ENV_ID
    num_players: int = 1
    max_turns: int | None = None
    turn: int = Field(default=0, description="TextArena's turn: valid guesses, plus one for a game-ending invalid move.")
    last_reward: float = 0.0
    last_info: dict[str, Any] = Field(default_factory=dict)
    secret: str = ""
    max_guesses: int = DEFAULT_MAX_GUESSES
    strict_format: bool = False
    guesses: list[str] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list)
    invalid_streak: int = Field(default=0, description="Invalid moves in a row (a second one ends the game).")
    done: bool = False
    won: bool = False
    reason: str | None = None
