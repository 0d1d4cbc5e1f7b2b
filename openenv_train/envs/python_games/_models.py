"""Wire models of the OpenSpiel-compatible envs, shaped like OpenEnv's ``openspiel_env``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ...core import Action, Observation, State

__all__ = ["OpenSpielAction", "OpenSpielObservation", "OpenSpielState", "GamePhase"]

GamePhase = Literal["initial", "playing", "terminal"]


class OpenSpielAction(Action):
    """Play one OpenSpiel action id; it must be one of the observation's ``legal_actions``."""

    action_id: int = Field(
        default=0, strict=True,
        description="OpenSpiel action id to play (one of legal_actions). Defaults to 0 so that {} is a valid action.",
    )
    game_name: str | None = Field(
        default=None,
        description="Accepted because OpenEnv's OpenSpielAction sends it; ignored, the served env fixes the game.",
    )
    game_params: dict[str, Any] = Field(
        default_factory=dict,
        description="Accepted because OpenEnv's OpenSpielAction sends it; ignored, game parameters are reset options.",
    )


class OpenSpielObservation(Observation):
    """What the agent sees after its move and the automatic moves of chance and opponents."""

    info_state: list[float] = Field(
        default_factory=list,
        description="OpenSpiel's information_state_tensor (kuhn_poker) or observation_tensor (other games), flattened.",
    )
    legal_actions: list[int] = Field(default_factory=list, description="Action ids the agent may play now.")
    game_phase: GamePhase = Field(
        default="playing", description="initial (before the agent's first move), playing, or terminal."
    )
    current_player_id: int = Field(
        default=0, description="OpenSpiel player to move: the agent's id, or -4 once the game is over."
    )
    opponent_last_action: int | None = Field(
        default=None, description="The opponent's most recent action id this episode, or null."
    )
    info_string: str = Field(
        default="", description="OpenSpiel's string for the same view as info_state (a text rendering of it)."
    )
    illegal_action: bool = Field(
        default=False, description="True when the step's action was rejected and the game did not move."
    )
    message: str = Field(default="", description="Why the action was rejected, and what is legal; else empty.")


class OpenSpielState(State):
    """Episode state: OpenEnv's fields plus a count of rejected actions."""

    game_name: str = Field(default="", description="OpenSpiel's name of the game (for pyspiel.load_game).")
    agent_player: int = Field(default=0, description="The OpenSpiel player id the agent plays.")
    opponent_policy: str = Field(default="random", description="random, first, last, heuristic, or none (one player).")
    game_params: dict[str, Any] = Field(default_factory=dict, description="Game parameters, as pyspiel.load_game takes them.")
    num_players: int = Field(default=1, description="Players in the game (chance not counted).")
    illegal_action_count: int = Field(default=0, ge=0, description="Rejected actions this episode (also in step_count).")
