"""The bounded driver on a real local Ray: lazy specs and backpressure on submit, and actors that write their
own trace shards (one manifest merged by the driver), exactly once through an actor killed mid-run."""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_train.pool import EpisodeSpec, PoolConfig, RolloutPool, make_groups
from openenv_train.trace import CaptureStore, TraceWriter, read_traces
from tests.pool import _support


def test_actor_written_shards_are_exactly_once_through_a_killed_actor(ray_local: Any, tmp_path: Path) -> None:
    specs = make_groups(range(12), num_generations=2)
    with TraceWriter(tmp_path, flush_rows=3) as writer, RolloutPool(
            "wordle", _support.slow_solver, num_actors=2, sessions_per_actor=3, max_retries=3, writer=writer,
            write="actors") as pool:
        stream = pool.as_completed(specs)
        rows = [next(stream) for _ in range(2)]  # two rows merged: shards are flowing, others are buffered
        ray_local.kill(pool.actors[0], no_restart=False)
        rows += list(stream)
        metrics = pool.metrics.summary()
    stored = read_traces(tmp_path)
    counts = collections.Counter(r.episode_id for r in stored)
    assert len(rows) == 24 and len({r.episode_id for r in rows}) == 24
    assert len(counts) == 24 and set(counts.values()) == {1}, counts
    assert all(r.ok and r.reward == 1.0 and r.steps for r in stored)  # full rows, written by the actors
    assert {r.trace_id for r in rows} == {r.trace_id for r in stored}  # the driver's rows name the stored ones
    manifest = json.loads((tmp_path / "traces" / "manifest.json").read_text())
    assert manifest["rows"] == 24 and len(manifest["shards"]) >= 2
    assert not (tmp_path / "staging").exists()
    assert metrics["actor_failures"] >= 1 and metrics["retries"] >= 1 and metrics["episodes"] == 24


def test_bounded_queue_pulls_specs_lazily_and_submit_waits_for_room(ray_local: Any) -> None:
    pulled = [0]

    def lazy() -> Iterator[EpisodeSpec]:
        for spec in make_groups(range(16), num_generations=1):
            pulled[0] += 1
            yield spec

    with RolloutPool("wordle", _support.solver, num_actors=1, sessions_per_actor=2, max_queued=2) as pool:
        held = []
        for i, _ in enumerate(pool.as_completed(lazy()), 1):
            held.append(pulled[0] - i)  # specs taken from the iterator and not yet yielded
        assert i == 16 and max(held) <= 2 + 2 + 1, held  # queue + slots (+ the one being submitted)
        for spec in make_groups(range(8), num_generations=1, prefix="more"):
            pool.submit(spec)  # the 3rd on blocks until an episode leaves the queue
            assert len(pool._queue) <= 2
        rows = list(pool.as_completed())
    assert len(rows) == 8 and all(r.ok for r in rows)


def test_actor_writes_need_a_writer_and_no_capture(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a writer"):
        RolloutPool("wordle", _support.solver, write="actors")
    with TraceWriter(tmp_path) as writer, pytest.raises(ValueError, match="cannot record model turns"):
        RolloutPool("wordle", "http://127.0.0.1:1/v1", write="actors", writer=writer, capture=CaptureStore())
    with pytest.raises(ValueError, match="max_queued"):
        PoolConfig(max_queued=0)


def test_add_shard_moves_accepted_rows_into_the_manifest(tmp_path: Path) -> None:
    from openenv_train.trace import EnvInfo, TraceRow

    def row(i: int) -> TraceRow:
        return TraceRow(run_id="r", episode_id=f"e{i}", env=EnvInfo(name="counter"), reward=float(i))

    with TraceWriter(tmp_path / "stage") as stage:
        stage.write_many(row(i) for i in range(4))
        whole = stage.flush()
        stage.write_many(row(i) for i in range(4, 8))
        partial = stage.flush()
    assert whole is not None and partial is not None
    with TraceWriter(tmp_path / "run") as writer:
        writer.write(row(9))
        assert writer.add_shard(whole) is not None and not whole.exists()  # moved as is
        dropped = {r.trace_id for r in read_traces(tmp_path / "stage") if r.episode_id in ("e5", "e6")}
        assert writer.add_shard(partial, keep=lambda t: t not in dropped) is not None
        assert writer.written(("r", "e7")) and not writer.written(("r", "e5"))
    stored = read_traces(tmp_path / "run")
    assert sorted(r.episode_id for r in stored) == ["e0", "e1", "e2", "e3", "e4", "e7", "e9"]
    assert json.loads((tmp_path / "run" / "traces" / "manifest.json").read_text())["rows"] == 7
