"""Pool pieces that need no Ray: config checks, groups, exports, lazy Ray."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenv_train import pool
from openenv_train.pool import EpisodeSpec, PoolConfig, make_groups
from openenv_train.trace import TraceWriter, read_traces


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


def _ledger_row(episode: str) -> Any:
    from openenv_train.trace import EnvInfo, TraceRow

    return TraceRow(run_id="r", episode_id=episode, env=EnvInfo(name="wordle"), reward=1.0)


def test_an_actor_shard_holds_two_attempts_of_one_episode(tmp_path: Path) -> None:
    from openenv_train.pool._shards import ActorShards

    shards = ActorShards(str(tmp_path), flush_rows=2)
    first, second = _ledger_row("e1"), _ledger_row("e1")  # a superseded attempt and the one the driver accepted
    shards.add(first)
    shards.add(second)
    entry = shards.flush()
    shards.close()
    assert entry is not None and [i[0] for i in entry["ids"]] == [first.trace_id, second.trace_id]
    assert {r.trace_id for r in read_traces(tmp_path / "staging" / shards.incarnation)} == {first.trace_id,
                                                                                            second.trace_id}


def test_a_late_failure_of_a_dead_incarnation_leaves_the_live_ones_rows(tmp_path: Path) -> None:
    from openenv_train.pool._shards import ActorShards, ShardLedger

    with TraceWriter(tmp_path / "run") as writer:
        ledger = ShardLedger(writer)
        assert ledger.seen(0, "A") == []
        ledger.accept(0, "t1", "job1", _ledger_row("e1"))
        lost = ledger.seen(0, "B")  # the restarted actor answered: what A buffered is gone
        assert [job for job, _ in lost] == ["job1"]
        live = ActorShards(str(tmp_path / "run"), flush_rows=1)
        row = _ledger_row("e2")
        live.add(row)
        ledger.accept(0, row.trace_id, "job2", row)
        assert ledger.lost(0, "A") == []  # a call sent to A fails late: B's rows stay
        entry = live.flush()
        assert entry is not None
        written, missing = ledger.merge(0, entry)
        assert [r.trace_id for r in written] == [row.trace_id] and missing == []
        assert ledger.lost(0, "B") == [] and ledger.waiting == 0
        live.close()
    assert [r.trace_id for r in read_traces(tmp_path / "run")] == [row.trace_id]


def test_a_shard_missing_a_reported_row_hands_its_job_back(tmp_path: Path) -> None:
    from openenv_train.pool._shards import ShardLedger

    with TraceWriter(tmp_path / "stage") as stage:
        held = _ledger_row("e1")
        stage.write(held)
        shard = stage.flush()
    assert shard is not None
    absent = _ledger_row("e2")
    with TraceWriter(tmp_path / "run") as writer:
        ledger = ShardLedger(writer)
        ledger.seen(0, "A")
        ledger.accept(0, held.trace_id, "job1", held)
        ledger.accept(0, absent.trace_id, "job2", absent)
        entry = {"file": str(shard), "ids": [[held.trace_id, "r", "e1"], [absent.trace_id, "r", "e2"]]}
        written, missing = ledger.merge(0, entry)
    assert [r.trace_id for r in written] == [held.trace_id]
    assert [job for job, _ in missing] == ["job2"]  # never reported as written: played again
