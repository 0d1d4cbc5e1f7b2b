"""The traffic env: a SUMO intersection through libsumo (a process per session), phases, sumo-rl's observation and
rewards, seeding, the episode's length, bad actions, a dead simulation, both clients."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import psutil
import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient

from tests.conftest import serve_inloop

pytest.importorskip("libsumo", reason="needs the traffic extra: pip install 'openenv-train[traffic]'")
pytest.importorskip("sumo", reason="needs the traffic extra: pip install 'openenv-train[traffic]'")

from openenv_train.envs.traffic import (  # noqa: E402
    SumoAction,
    SumoRLEnv,
    TrafficEnvironment,
    bundled_network,
    sumo_home,
)


def _drivers() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if any("_driver.py" in a for a in p.cmdline())]


async def test_phases_observation_episode_length_and_bad_actions() -> None:
    env = TrafficEnvironment()
    try:
        first = await env.reset(seed=1, episode_id="e", num_seconds=100)
        phases, lanes = len(first.action_mask), len(first.lanes)
        assert phases >= 2 and lanes == 8 and first.observation_shape == [phases + 1 + 2 * lanes]
        assert first.observation[:phases] == [1.0] + [0.0] * (phases - 1) and first.sim_time == 0.0
        for action, why in ((SumoAction(phase_id=phases), "out of range"), (SumoAction(ts_id="t"), "one signal is '0'")):
            bad = await env.step(action)
            assert bad.error is not None and why in bad.error and bad.observation == first.observation
        assert env.state.step_count == 0
        seen, steps, last = set(), 0, first
        while not last.done:
            last = await env.step(SumoAction(phase_id=steps // 3 % phases))
            assert last.error is None and isinstance(last.reward, float)
            seen.add(last.phase)
            steps += 1
        assert steps == 20 and last.sim_time == 100.0 and seen == set(range(phases))
        assert env.state.total_vehicles > 0 and last.metadata["system_info"]["system_total_departed"] > 0
        over = await env.step(SumoAction())
        assert over.error is not None and "reset()" in over.error
        (driver,) = _drivers()
        limit = 2 * 2**30
        assert driver.rlimit(psutil.RLIMIT_AS) == (limit, limit)
    finally:
        await env.close()
    assert not _drivers(), "closing the env ends its simulation's process"


async def test_same_seed_same_traffic_and_the_rewards() -> None:
    env = TrafficEnvironment()  # one simulation process: each reset starts a new simulation in it

    async def run(seed: int, reward_fn: str = "diff-waiting-time") -> list[tuple[list[float], float | None]]:
        await env.reset(seed=seed, num_seconds=60, reward_fn=reward_fn)  # type: ignore[arg-type]
        return [((o := await env.step(SumoAction(phase_id=i % 2))).observation, o.reward) for i in range(12)]

    try:
        seven = await run(7)
        assert await run(7) == seven and await run(8) != seven
        assert all(reward is not None and reward <= 0 for _, reward in await run(7, "queue"))
        assert all(reward is not None and 0 <= reward <= 1 for _, reward in await run(7, "average-speed"))
        with pytest.raises(ValueError, match="delta_time"):
            await env.reset(delta_time=2, yellow_time=2)
    finally:
        await env.close()


async def test_a_dead_simulation_is_an_error_and_the_next_reset_works() -> None:
    env = TrafficEnvironment()
    try:
        await env.reset(seed=2, num_seconds=60)
        (driver,) = _drivers()
        driver.kill()
        dead = await env.step(SumoAction())
        assert dead.done and dead.error is not None and "simulation" in dead.error
        again = await env.reset(seed=2, num_seconds=60)
        assert not again.done and (await env.step(SumoAction())).error is None
    finally:
        await env.close()


async def test_openenv_generic_client_and_the_typed_client_over_the_wire() -> None:
    async with serve_inloop(TrafficEnvironment) as server:
        async with OEGenericEnvClient(base_url=server.url) as oe:
            first = await oe.reset(seed=1, num_seconds=50)
            assert first.observation["action_mask"] and first.observation["observation_shape"]
            bad = await oe.step({"phase_id": 99})
            assert "out of range" in bad.observation["error"]
            result = await oe.step({"phase_id": 1, "ts_id": "0"})
            assert result.done is False and result.observation["sim_time"] == 5.0
            assert (await oe.state())["step_count"] == 1
        async with SumoRLEnv(base_url=server.url) as env:
            await env.reset(seed=1, num_seconds=50)
            typed = await env.step(SumoAction(phase_id=0))
            assert typed.observation.error is None and (await env.state()).total_vehicles >= 0


def test_the_bundled_network_is_what_netconvert_builds_from_its_sources(tmp_path: Path) -> None:
    net, _routes = bundled_network()
    nets = Path(net).parent
    home = sumo_home()
    subprocess.run([f"{home}/bin/netconvert", "--node-files", str(nets / "intersection.nod.xml"),
                    "--edge-files", str(nets / "intersection.edg.xml"), "--connection-files",
                    str(nets / "intersection.con.xml"), "--no-turnarounds", "true", "--output-file",
                    str(tmp_path / "built.net.xml")], check=True, capture_output=True, env={**os.environ, "SUMO_HOME": home},
                   timeout=120)

    def body(path: Path) -> str:  # without the header comment (the date and the files' paths)
        return re.sub(r"<!-- generated on .*?-->", "", path.read_text(), flags=re.S)

    assert body(tmp_path / "built.net.xml") == body(Path(net))
    assert '<phase duration="33" state="GGgrrrGGgrrr"/>' in body(Path(net)), "four green phases, two of them left turns"
