"""A real local Ray pool of 2 actors over real Wordle servers, with the scripted expert."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openenv_train.pool import RolloutPool, make_groups
from openenv_train.trace import TraceWriter, read_traces
from tests.pool import _support


def test_two_actors_play_groups_and_write_complete_traces(ray_local: Any, tmp_path: Path) -> None:
    specs = make_groups(range(6), num_generations=2)
    with TraceWriter(tmp_path, flush_rows=5) as writer, RolloutPool(
        "wordle", _support.solver, num_actors=2, sessions_per_actor=3, run_id="wordle-run", policy_version=7,
        writer=writer, show_progress=True,
    ) as pool:
        rows = pool.run(specs)
        summary = pool.metrics.summary()
    assert [r.episode_id for r in rows] == [s.episode_id for s in specs]  # input order
    assert all(r.ok and r.done and r.reward == 1.0 for r in rows)
    assert summary["episodes"] == 12 and summary["failed"] == 0 and summary["retries"] == 0
    assert summary["env_step_ms"] > 0 and summary["episodes_per_s"] > 0
    for a, b in zip(rows[::2], rows[1::2], strict=True):  # a group shares task and seed: the expert plays the same game
        assert a.group_id == b.group_id and a.task == b.task
        assert [s.action for s in a.steps] == [s.action for s in b.steps]
    assert {r.policy.version for r in rows} == {7}
    assert len({r.env.url for r in rows}) == 2  # both actors' servers played
    stored = read_traces(tmp_path)
    assert sorted(r.episode_id for r in stored) == sorted(s.episode_id for s in specs)
    assert all(r.steps and r.steps[-1].done and r.timings["total_s"] > 0 for r in stored)


def test_resume_skips_written_episodes_and_as_completed_streams(ray_local: Any, tmp_path: Path) -> None:
    specs = make_groups(range(4), num_generations=1)
    with TraceWriter(tmp_path) as writer:
        writer_rows = []
        with RolloutPool("wordle", _support.solver, num_actors=1, sessions_per_actor=2, run_id="r",
                         writer=writer) as pool:
            for row in pool.as_completed(specs[:2]):
                writer_rows.append(row.episode_id)
            rows = pool.run(specs[2:])
    assert sorted(writer_rows) == ["g0-0", "g1-0"]
    assert len(rows) == 2
    with TraceWriter(tmp_path, resume=True) as writer, RolloutPool(
        "wordle", _support.solver, num_actors=1, sessions_per_actor=2, run_id="r", writer=writer,
    ) as pool:
        assert pool.run(specs) == []
        assert pool.metrics.skipped == 4
    assert len(read_traces(tmp_path)) == 4
    # a trainer resumed mid-step needs every row of the step: written ones are read back, not played again
    extra = make_groups([4], num_generations=1, prefix="x")
    with TraceWriter(tmp_path, resume=True) as writer, RolloutPool(
        "wordle", _support.solver, num_actors=1, sessions_per_actor=2, run_id="r", writer=writer,
    ) as pool:
        both = pool.run(specs[1:3] + extra, include_written=True)
        assert pool.metrics.skipped == 2 and pool.metrics.episodes == 1
    stored = {r.episode_id: r for r in read_traces(tmp_path)}
    assert [r.episode_id for r in both] == ["g1-0", "g2-0", "x0-0"]
    assert [r.trace_id for r in both[:2]] == [stored["g1-0"].trace_id, stored["g2-0"].trace_id]
    assert len(stored) == 5


def test_batched_calls_and_an_in_flight_cap(ray_local: Any) -> None:
    specs = make_groups(range(9), num_generations=1)
    with RolloutPool("wordle", _support.solver, num_actors=2, sessions_per_actor=4, episodes_per_call=3,
                     max_in_flight=5) as pool:
        rows = pool.run(specs, ordered=False)
        assert pool.pending == 0
    assert sorted(r.episode_id for r in rows) == sorted(s.episode_id for s in specs)
    assert all(r.ok for r in rows)
