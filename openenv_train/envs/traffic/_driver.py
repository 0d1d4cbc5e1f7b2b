"""Runs in a child process of its own: one SUMO simulation through libsumo, driven by JSON lines on stdin.

Standard library and libsumo only, started as a script (``python -I _driver.py``) so that it loads nothing of the
server. libsumo holds one simulation per process, so every session has its own driver. Requests are
``{"op": "start", ...settings}`` (a new simulation: the reset) and ``{"op": "step", "phase": int}``; each gets
one reply line: the observation, reward, ``done`` and the system's figures, or ``{"error"}``.

The traffic signal and its observation and rewards follow sumo-rl (Alegre, MIT licence): green phases are the
program's phases with no yellow, a change of phase goes through a yellow one, a phase holds for at least
``min_green`` seconds, and the agent acts every ``delta_time`` simulated seconds.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any

MIN_GAP = 2.5
"""SUMO's default gap between stopped vehicles (m): a lane of length L holds L / (MIN_GAP + vehicle length)."""
MEMORY_BYTES = 2 * 2**30
REWARDS = ("diff-waiting-time", "average-speed", "queue", "pressure")


class Intersection:
    """One signalised junction: its green phases, incoming and outgoing lanes, the phase logic and the metrics."""

    def __init__(self, sumo: Any, ts_id: str, *, delta_time: int, yellow_time: int, min_green: int) -> None:
        self.sumo, self.id = sumo, ts_id
        self.delta_time, self.yellow_time, self.min_green = delta_time, yellow_time, min_green
        program = sumo.trafficlight.getAllProgramLogics(ts_id)[0]
        self.greens = [p.state for p in program.phases
                       if "y" not in p.state and p.state.count("r") + p.state.count("s") != len(p.state)]
        self.lanes = list(dict.fromkeys(sumo.trafficlight.getControlledLanes(ts_id)))
        self.out_lanes = sorted({link[0][1] for link in sumo.trafficlight.getControlledLinks(ts_id) if link})
        self.length = {lane: sumo.lane.getLength(lane) for lane in self.lanes + self.out_lanes}
        self.green, self.yellow = 0, False
        self.since_change, self.next_action_time = 0, 0.0
        self.last_wait = 0.0
        self.waits: dict[str, dict[str, float]] = {}
        sumo.trafficlight.setRedYellowGreenState(ts_id, self.greens[0])

    def time_to_act(self, now: float) -> bool:
        return self.next_action_time == now

    def set_next_phase(self, phase: int, now: float) -> None:
        """Hold the green phase, or go through yellow to ``phase`` once ``min_green`` has passed."""
        self.next_action_time = now + self.delta_time
        if phase == self.green or self.since_change < self.yellow_time + self.min_green:
            self.sumo.trafficlight.setRedYellowGreenState(self.id, self.greens[self.green])
            return
        old, new = self.greens[self.green], self.greens[phase]
        yellow = "".join("y" if a in "Gg" and b in "rs" else a for a, b in zip(old, new, strict=True))
        self.sumo.trafficlight.setRedYellowGreenState(self.id, yellow)
        self.green, self.yellow, self.since_change = phase, True, 0

    def tick(self) -> None:
        """One simulated second went by: end the yellow when its time is up."""
        self.since_change += 1
        if self.yellow and self.since_change == self.yellow_time:
            self.sumo.trafficlight.setRedYellowGreenState(self.id, self.greens[self.green])
            self.yellow = False

    def _capacity(self, lane: str) -> float:
        return self.length[lane] / (MIN_GAP + self.sumo.lane.getLastStepLength(lane))

    def densities(self) -> list[float]:
        return [min(1.0, self.sumo.lane.getLastStepVehicleNumber(lane) / self._capacity(lane)) for lane in self.lanes]

    def queues(self) -> list[float]:
        return [min(1.0, self.sumo.lane.getLastStepHaltingNumber(lane) / self._capacity(lane)) for lane in self.lanes]

    def observation(self) -> list[float]:
        """sumo-rl's default: the green phase one-hot, whether min_green has passed, density and queue per lane."""
        one_hot = [1.0 if i == self.green else 0.0 for i in range(len(self.greens))]
        ready = [0.0 if self.since_change < self.min_green + self.yellow_time else 1.0]
        return one_hot + ready + self.densities() + self.queues()

    def waiting_per_lane(self) -> list[float]:
        """Accumulated waiting time of the vehicles on each incoming lane, counted on the lane where it was spent."""
        per_lane = []
        for lane in self.lanes:
            total = 0.0
            for vehicle in self.sumo.lane.getLastStepVehicleIDs(lane):
                on = self.sumo.vehicle.getLaneID(vehicle)
                waited = self.sumo.vehicle.getAccumulatedWaitingTime(vehicle)
                seen = self.waits.setdefault(vehicle, {})
                seen[on] = waited - sum(w for other, w in seen.items() if other != on)
                total += seen[on]
            per_lane.append(total)
        return per_lane

    def reward(self, name: str) -> float:
        if name == "diff-waiting-time":
            wait = sum(self.waiting_per_lane()) / 100.0
            reward, self.last_wait = self.last_wait - wait, wait
            return reward
        if name == "queue":
            return -float(sum(self.sumo.lane.getLastStepHaltingNumber(lane) for lane in self.lanes))
        if name == "pressure":
            count = self.sumo.lane.getLastStepVehicleNumber
            return float(sum(count(lane) for lane in self.out_lanes) - sum(count(lane) for lane in self.lanes))
        vehicles = [v for lane in self.lanes for v in self.sumo.lane.getLastStepVehicleIDs(lane)]
        if not vehicles:
            return 1.0
        speed, allowed = self.sumo.vehicle.getSpeed, self.sumo.vehicle.getAllowedSpeed
        return sum(speed(v) / allowed(v) for v in vehicles) / len(vehicles)


class Simulation:
    """The single-agent environment of sumo-rl over libsumo: start, step, and the system's figures."""

    def __init__(self, sumo: Any) -> None:
        self.sumo = sumo
        self.running = False
        self.signal: Intersection | None = None
        self.settings: dict[str, Any] = {}
        self.arrived = self.departed = self.teleported = 0

    def start(self, settings: dict[str, Any]) -> dict[str, Any]:
        self.close()
        self.settings = settings
        self.sumo.start(["sumo", "-n", settings["net"], "-r", settings["route"], "--seed", str(settings["seed"]),
                         "--max-depart-delay", "-1", "--waiting-time-memory", "1000", "--time-to-teleport", "-1",
                         "--no-warnings", "--no-step-log", "--duration-log.disable"])
        self.running = True
        ids = list(self.sumo.trafficlight.getIDList())
        if not ids:
            raise ValueError(f"the network {settings['net']} has no traffic light")
        self.signal = Intersection(self.sumo, ids[0], delta_time=settings["delta_time"],
                                   yellow_time=settings["yellow_time"], min_green=settings["min_green"])
        self.arrived = self.departed = self.teleported = 0
        return {**self._reply(0.0), "ts_id": self.signal.id, "lanes": self.signal.lanes,
                "num_green_phases": len(self.signal.greens)}

    def step(self, phase: int) -> dict[str, Any]:
        signal = self.signal
        assert signal is not None
        now = self.sumo.simulation.getTime()
        if signal.time_to_act(now):
            signal.set_next_phase(phase, now)
        while True:
            self.sumo.simulationStep()
            self.arrived += self.sumo.simulation.getArrivedNumber()
            self.departed += self.sumo.simulation.getDepartedNumber()
            self.teleported += self.sumo.simulation.getEndingTeleportNumber()
            signal.tick()
            if signal.time_to_act(self.sumo.simulation.getTime()):
                break
        return self._reply(signal.reward(self.settings["reward_fn"]))

    def _reply(self, reward: float) -> dict[str, Any]:
        assert self.signal is not None
        now = self.sumo.simulation.getTime()
        return {"observation": self.signal.observation(), "reward": reward, "phase": self.signal.green,
                "sim_time": now, "done": now >= self.settings["num_seconds"], "system": self.system()}

    def system(self) -> dict[str, Any]:
        """sumo-rl's system figures: vehicles running, waiting, stopped, arrived, ..."""
        vehicle = self.sumo.vehicle
        ids = vehicle.getIDList()
        speeds = [vehicle.getSpeed(v) for v in ids]
        waits = [vehicle.getWaitingTime(v) for v in ids]
        return {"system_total_running": len(ids),
                "system_total_backlogged": len(self.sumo.simulation.getPendingVehicles()),
                "system_total_stopped": sum(s < 0.1 for s in speeds), "system_total_arrived": self.arrived,
                "system_total_departed": self.departed, "system_total_teleported": self.teleported,
                "system_total_waiting_time": sum(waits),
                "system_mean_waiting_time": sum(waits) / len(ids) if ids else 0.0,
                "system_mean_speed": sum(speeds) / len(ids) if ids else 0.0}

    def close(self) -> None:
        if self.running:
            self.sumo.close()
            self.running = False
            self.signal = None


def handle(simulation: Simulation, request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op == "start":
        return simulation.start(request)
    if op == "step":
        if not simulation.running:
            return {"error": "no simulation is running"}
        return simulation.step(int(request["phase"]))
    return {"error": f"unknown op {op!r}"}


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # SUMO's own messages go to stderr (the host's log), never into the replies
    import libsumo

    simulation = Simulation(libsumo)
    replies.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        try:
            reply = handle(simulation, json.loads(line))
        except Exception as exc:  # the host shows the error; the driver goes on
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        replies.write(json.dumps(reply) + "\n")
    simulation.close()


if __name__ == "__main__":
    main()
