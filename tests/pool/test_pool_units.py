"""Pool pieces that need no Ray: config checks, groups, exports, lazy Ray."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openenv_train import pool
from openenv_train.pool import EpisodeSpec, PoolConfig, make_groups


def test_exports_resolve() -> None:
    assert not [name for name in pool.__all__ if not hasattr(pool, name)]


def test_importing_the_pool_does_not_import_ray() -> None:
    code = "import sys, openenv_train.pool; print('ray' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_an_actor_used_as_plain_python_starts_no_ray() -> None:
    """LocalRunner's way: ready() outside Ray reports no node and leaves Ray unstarted (a Ray started from its loop
    thread dies with that thread and ends the process at its next Ray call)."""
    code = ("import asyncio, ray\n"
            "from openenv_train.pool import PoolConfig, RolloutActor, TextAgent\n"
            "async def main():\n"
            "    actor = RolloutActor('counter', lambda observation: {}, TextAgent(), PoolConfig())\n"
            "    try:\n"
            "        return (await actor.ready())['node_id']\n"
            "    finally:\n"
            "        await actor.close()\n"
            "print(asyncio.run(main()), ray.is_initialized())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["None", "False"]


@pytest.mark.parametrize("bad", [{"num_actors": 0}, {"max_in_flight": 0}, {"episode_timeout_s": 0},
                                 {"max_retries": -1}, {"max_staleness": -1}, {"client": "grpc"},
                                 {"actor_scheduling": "pack"}, {"actor_resources": {"rollout": -1}}])
def test_config_refuses_bad_values(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        PoolConfig(**bad)  # type: ignore[arg-type]


def test_capacity_is_slots_capped_by_in_flight() -> None:
    assert PoolConfig(num_actors=3, sessions_per_actor=4).capacity == 12
    assert PoolConfig(num_actors=3, sessions_per_actor=4, max_in_flight=5).capacity == 5


def test_groups_share_seed_and_task() -> None:
    specs = make_groups([{"task": "crane"}, {"seed": 9}], num_generations=3)
    assert [s.episode_id for s in specs] == ["g0-0", "g0-1", "g0-2", "g1-0", "g1-1", "g1-2"]
    assert {(s.group_id, s.seed) for s in specs} == {("g0", 0), ("g1", 9)}
    assert specs[0].reset_options() == {"task": "crane", "seed": 0}
    assert EpisodeSpec("x").reset_options() == {}
