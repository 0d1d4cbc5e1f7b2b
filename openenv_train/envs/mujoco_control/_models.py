"""Wire types of the dm_control env (OpenEnv dm_control_env's shapes): action, observation and state."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ...core import Action, Observation, State

__all__ = ["DMControlAction", "DMControlObservation", "DMControlState"]


class DMControlAction(Action):
    """Continuous action values, one per actuator (``action_spec`` in the state gives the shape and bounds)."""

    values: list[float] = Field(
        default_factory=list,
        description="One value per actuator, each within action_spec's minimum..maximum; an empty list is the zero "
                    "action (no force).")


class DMControlObservation(Observation):
    """The task's named observation arrays (flattened), and a rendered frame when asked for."""

    observations: dict[str, list[float]] = Field(
        default_factory=dict, description="Named observation arrays of the task (position, velocity, ...), flattened.")
    pixels: str | None = Field(default=None, description="The scene as a base64 PNG (reset with render=true), else null.")
    error: str | None = Field(default=None, description="Why the action was rejected (nothing was simulated), else null.")


class DMControlState(State):
    """The loaded task, its action and observation specs and its clocks."""

    domain_name: str = Field(default="cartpole", description="The dm_control suite domain.")
    task_name: str = Field(default="balance", description="The task within the domain.")
    action_spec: dict[str, Any] = Field(default_factory=dict,
                                        description="shape, dtype, minimum, maximum and name of the action.")
    observation_spec: dict[str, Any] = Field(default_factory=dict,
                                             description="shape and dtype of each named observation.")
    physics_timestep: float = Field(default=0.0, description="Seconds of one physics step.")
    control_timestep: float = Field(default=0.0, description="Seconds between actions (a step).")
    episode_return: float = Field(default=0.0, description="Sum of the rewards so far this episode.")
