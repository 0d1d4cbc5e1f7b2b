"""Wire types of the traffic env (OpenEnv sumo_rl_env's shapes): action, observation and state."""

from __future__ import annotations

from pydantic import Field

from ...core import Action, Observation, State

__all__ = ["SumoAction", "SumoObservation", "SumoState"]


class SumoAction(Action):
    """The green phase the traffic light shows next (changes go through yellow and respect min_green)."""

    phase_id: int = Field(default=0, description="Index of the green phase to show next: one of action_mask.")
    ts_id: str = Field(default="0", description="The traffic signal: the network's one signal, '0'.")


class SumoObservation(Observation):
    """sumo-rl's observation vector of the intersection and the system's figures."""

    observation: list[float] = Field(
        default_factory=list,
        description="The green phase one-hot, whether min_green has passed (0/1), then each incoming lane's density "
                    "and then each lane's queue, both as a share of the lane's capacity.")
    observation_shape: list[int] = Field(default_factory=list, description="Shape of observation: [length].")
    action_mask: list[int] = Field(default_factory=list, description="The valid phase ids.")
    sim_time: float = Field(default=0.0, description="Simulated seconds since the start.")
    phase: int = Field(default=0, description="The green phase now shown (or coming after the yellow).")
    lanes: list[str] = Field(default_factory=list, description="The incoming lanes, in the order of the densities "
                                                               "and queues in observation.")
    error: str | None = Field(default=None, description="Why the action was rejected (nothing was simulated), else null.")


class SumoState(State):
    """The simulation's settings and its running figures."""

    net_file: str = ""
    route_file: str = ""
    num_seconds: int = Field(default=3600, description="Simulated seconds of an episode.")
    delta_time: int = Field(default=5, description="Simulated seconds between actions.")
    yellow_time: int = Field(default=2, description="Seconds of yellow between two green phases.")
    min_green: int = Field(default=5, description="Seconds a green phase holds at least.")
    max_green: int = Field(default=50, description="sumo-rl's setting, kept for its shape (sumo-rl ignores it too).")
    reward_fn: str = Field(default="diff-waiting-time", description="The reward: diff-waiting-time, average-speed, "
                                                                   "queue or pressure.")
    seed: int = Field(default=0, description="SUMO's random seed of this episode.")
    sim_time: float = 0.0
    total_vehicles: int = Field(default=0, description="Vehicles in the network now.")
    total_waiting_time: float = Field(default=0.0, description="Seconds the vehicles now in the network are waiting.")
    mean_waiting_time: float = 0.0
    mean_speed: float = 0.0
    episode_return: float = 0.0
