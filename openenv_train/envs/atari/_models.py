"""Wire types of the Atari env (OpenEnv atari_env's shapes): action, observation and state."""

from __future__ import annotations

from pydantic import Field

from ...core import Action, Observation, State

__all__ = ["AtariAction", "AtariObservation", "AtariState"]


class AtariAction(Action):
    """One action id: an index into ``legal_actions`` (the game's minimal action set unless full_action_space)."""

    action_id: int = Field(default=0, description="Index into legal_actions / action_meanings (0 is NOOP).")


class AtariObservation(Observation):
    """The screen (a base64 PNG, or OpenEnv's flat list of ints), the RAM, lives and frame counters."""

    screen_png: str = Field(default="", description="The screen as a base64 PNG (obs_type rgb or grayscale).")
    screen: list[int] = Field(default_factory=list,
                              description="The screen (or RAM) as a flat list of ints (screen_format 'list', as "
                                          "OpenEnv's atari_env), or the 128 RAM bytes (obs_type ram).")
    screen_shape: list[int] = Field(default_factory=list, description="Shape of the screen: [210, 160, 3], [210, 160] "
                                                                      "or [128].")
    legal_actions: list[int] = Field(default_factory=list, description="Valid action ids.")
    action_meanings: list[str] = Field(default_factory=list, description="What each action id does (NOOP, FIRE, ...).")
    lives: int = 0
    episode_frame_number: int = 0
    frame_number: int = 0
    episode_return: float = Field(default=0.0, description="Score so far this episode.")
    error: str | None = Field(default=None, description="Why the action was rejected (nothing happened), else null.")


class AtariState(State):
    """Episode state: the game, its settings and the score."""

    game_name: str = ""
    obs_type: str = ""
    frameskip: int = 0
    repeat_action_probability: float = 0.0
    episode_return: float = 0.0
