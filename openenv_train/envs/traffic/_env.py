"""TrafficEnvironment: one signalised intersection in SUMO, its phases as actions (OpenEnv sumo_rl_env's shapes)."""

from __future__ import annotations

import uuid
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from ...server import Environment
from ._models import SumoAction, SumoObservation, SumoState
from ._process import SimulationDied, SimulationProcess

__all__ = ["TrafficEnvironment"]

RewardFn = Literal["diff-waiting-time", "average-speed", "queue", "pressure"]
Seconds = Annotated[int, Field(ge=10, le=86_400, description="Simulated seconds of an episode.")]
DeltaTime = Annotated[int, Field(ge=2, le=120, description="Simulated seconds between actions.")]
Yellow = Annotated[int, Field(ge=1, le=10, description="Seconds of yellow between two green phases.")]
Green = Annotated[int, Field(ge=1, le=600, description="Seconds a green phase holds at least (min_green) or, in "
                                                       "sumo-rl's shape, at most (max_green).")]
START_TIMEOUT_S = 60.0
STEP_TIMEOUT_S = 60.0
"""A step simulates delta_time seconds of a small network: far less than this, unless the process hangs."""


def bundled_network() -> tuple[str, str]:
    """The network and routes shipped with the env: a four-arm intersection, each arm two lanes in and out (the
    left one turns left), flows from every arm (``nets/README.md`` says how the network was built)."""
    nets = resources.files(__package__).joinpath("nets")
    return str(nets.joinpath("intersection.net.xml")), str(nets.joinpath("intersection.rou.xml"))


class TrafficEnvironment(Environment[SumoAction, SumoObservation, SumoState]):
    """Traffic-signal control at one intersection in SUMO (sumo-rl's single-agent environment, over libsumo).

    ``reset`` starts a simulation (seeded: the same seed gives the same arrivals); every step shows the chosen
    green phase for ``delta_time`` simulated seconds (a change goes through ``yellow_time`` of yellow, and a
    phase holds at least ``min_green``). The observation and reward are sumo-rl's: phase one-hot, min-green
    flag, lane densities and queues; reward the drop in accumulated waiting time (or average speed, queue,
    pressure). The episode ends after ``num_seconds``. Each session's simulation runs in a process of its own.

    Args:
        net_file: the SUMO network (.net.xml) to serve; its first traffic light is controlled. Default: the bundled
            intersection.
        route_file: its routes (.rou.xml).
        num_seconds: default episode length in simulated seconds.
    """

    name = "traffic"
    action_type = SumoAction
    observation_type = SumoObservation
    state_type = SumoState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")

    def __init__(self, *, net_file: str | None = None, route_file: str | None = None, num_seconds: int = 3600) -> None:
        if (net_file is None) != (route_file is None):
            raise ValueError("give both net_file and route_file, or neither (the bundled intersection)")
        self._files = (net_file, route_file) if net_file and route_file else bundled_network()
        self._num_seconds = num_seconds
        self._process: SimulationProcess | None = None
        self._ts_id = "0"
        self._phases = 0
        self._lanes: list[str] = []
        self._done = False
        self._last = SumoObservation()
        self._state = SumoState()

    async def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
                    num_seconds: Seconds | None = None, delta_time: DeltaTime = 5, yellow_time: Yellow = 2,
                    min_green: Green = 5, max_green: Green = 50,
                    reward_fn: RewardFn = "diff-waiting-time") -> SumoObservation:
        """Start a new simulation of the intersection.

        Raises:
            ValueError: settings sumo-rl refuses (delta_time must exceed yellow_time, max_green min_green).
            SimulationDied: SUMO did not start (the message holds its output).
        """
        if delta_time <= yellow_time:
            raise ValueError(f"delta_time ({delta_time}) must be greater than yellow_time ({yellow_time})")
        if max_green <= min_green:
            raise ValueError(f"max_green ({max_green}) must be greater than min_green ({min_green})")
        seconds = num_seconds or self._num_seconds
        sumo_seed = (seed if seed is not None else uuid.uuid4().int) % 2**31
        if self._process is None or not self._process.alive:
            self._process = await SimulationProcess.start(START_TIMEOUT_S)
        net, route = self._files
        reply = await self._request({"op": "start", "net": net, "route": route, "seed": sumo_seed,
                                     "num_seconds": seconds, "delta_time": delta_time, "yellow_time": yellow_time,
                                     "min_green": min_green, "reward_fn": reward_fn}, START_TIMEOUT_S)
        if "error" in reply:
            raise ValueError(f"SUMO could not start the simulation: {reply['error']}")
        self._ts_id, self._phases, self._lanes = str(reply["ts_id"]), int(reply["num_green_phases"]), reply["lanes"]
        self._done = False
        self._state = SumoState(episode_id=episode_id or uuid.uuid4().hex, net_file=Path(net).name,
                                route_file=Path(route).name, num_seconds=seconds, delta_time=delta_time,
                                yellow_time=yellow_time, min_green=min_green, max_green=max_green,
                                reward_fn=reward_fn, seed=sumo_seed)
        return self._observation(reply, reward=0.0)

    async def step(self, action: SumoAction) -> SumoObservation:  # type: ignore[override]
        """Show green phase ``action.phase_id`` for the next ``delta_time`` simulated seconds."""
        if self._process is None or not self._lanes:
            return SumoObservation(error="no simulation is running; call reset() first")
        if self._done:
            return SumoObservation(error="the episode is over; call reset() to start another", done=True, reward=0.0)
        mask = list(range(self._phases))
        if action.ts_id != self._ts_id:
            return self._rejected(f"no traffic signal {action.ts_id!r}: this network's one signal is {self._ts_id!r}")
        if action.phase_id not in mask:
            return self._rejected(f"phase_id {action.phase_id} is out of range: the green phases are 0.."
                                  f"{self._phases - 1} (action_mask)")
        try:
            reply = await self._request({"op": "step", "phase": action.phase_id}, STEP_TIMEOUT_S)
        except SimulationDied as exc:
            self._lanes, self._done = [], True
            return SumoObservation(error=str(exc), done=True, reward=0.0)
        if "error" in reply:
            return self._rejected(f"SUMO failed: {reply['error']}")
        reward = float(reply["reward"])
        self._state.step_count += 1
        self._state.episode_return += reward
        self._done = bool(reply["done"])
        return self._observation(reply, reward=reward, done=self._done)

    async def _request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        assert self._process is not None
        return await self._process.request(message, timeout_s)

    def _rejected(self, error: str) -> SumoObservation:
        """The last observation again, with why the action was rejected."""
        return self._last.model_copy(update={"error": error, "reward": 0.0, "done": False})

    def _observation(self, reply: dict[str, Any], **fields: Any) -> SumoObservation:
        system = reply["system"]
        state = self._state
        state.sim_time = float(reply["sim_time"])
        state.total_vehicles = int(system["system_total_running"])
        state.total_waiting_time = float(system["system_total_waiting_time"])
        state.mean_waiting_time = float(system["system_mean_waiting_time"])
        state.mean_speed = float(system["system_mean_speed"])
        vector = [float(v) for v in reply["observation"]]
        self._last = SumoObservation(observation=vector, observation_shape=[len(vector)],
                                     action_mask=list(range(self._phases)), sim_time=state.sim_time,
                                     phase=int(reply["phase"]), lanes=self._lanes,
                                     metadata={"num_green_phases": self._phases, "system_info": system}, **fields)
        return self._last

    @property
    def state(self) -> SumoState:
        return self._state

    async def close(self) -> None:
        """Stop the simulation and its process."""
        process, self._process = self._process, None
        self._lanes = []
        if process is not None:
            await process.close()
