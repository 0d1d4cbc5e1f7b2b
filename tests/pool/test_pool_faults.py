"""Fault tests on a real local Ray: env servers and actors killed mid-batch, retry budgets, timeouts, staleness."""

from __future__ import annotations

import collections
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
import pytest

from openenv_train.pool import PoolClosed, PoolStartTimeout, RolloutPool, make_groups
from openenv_train.trace import TraceWriter, read_traces
from tests.pool import _support


def _server_pids(ray: Any, pool: RolloutPool) -> list[int]:
    return [_support.actor_ready(ray, actor)["server_pid"] for actor in pool.actors]


def _exactly_once(rows: list[Any], stored: list[Any], expected: int) -> None:
    assert len(rows) == expected and len({r.episode_id for r in rows}) == expected
    counts = collections.Counter(r.episode_id for r in stored)
    assert len(counts) == expected and set(counts.values()) == {1}, counts


def test_killed_env_servers_are_replaced_and_episodes_retried(ray_local: Any, tmp_path: Path) -> None:
    specs = make_groups(range(12), num_generations=2)
    with TraceWriter(tmp_path) as writer, RolloutPool("wordle", _support.slow_solver, num_actors=2,
                                                      sessions_per_actor=3, max_retries=3, writer=writer) as pool:
        pids = _server_pids(ray_local, pool)
        stream = pool.as_completed(specs)
        rows = [next(stream) for _ in range(3)]
        for pid in pids:
            os.killpg(pid, signal.SIGKILL)
        rows += list(stream)
        metrics = pool.metrics.summary()
        assert set(_server_pids(ray_local, pool)).isdisjoint(pids)
    _exactly_once(rows, read_traces(tmp_path), 24)
    assert all(r.ok and r.reward == 1.0 for r in rows), [(r.episode_id, r.error, r.reward) for r in rows if not r.ok]
    assert metrics["retries"] >= 1 and metrics["server_restarts"] >= 1 and metrics["failed"] == 0
    assert any(r.timings["attempts"] > 1 for r in rows)


def test_killed_actor_is_restarted_and_its_episodes_redispatched(ray_local: Any, tmp_path: Path) -> None:
    specs = make_groups(range(10), num_generations=2)
    with TraceWriter(tmp_path) as writer, RolloutPool("wordle", _support.slow_solver, num_actors=2,
                                                      sessions_per_actor=3, max_retries=3, writer=writer) as pool:
        stream = pool.as_completed(specs)
        rows = [next(stream) for _ in range(2)]
        ray_local.kill(pool.actors[0], no_restart=False)
        rows += list(stream)
        metrics = pool.metrics.summary()
        assert _support.actor_ready(ray_local, pool.actors[0])["server_pid"]  # restarted, serving again
    _exactly_once(rows, read_traces(tmp_path), 20)
    assert all(r.ok for r in rows)
    assert metrics["actor_failures"] >= 1 and metrics["retries"] >= 1


def test_beyond_the_retry_budget_rows_fail_with_the_error(ray_local: Any, tmp_path: Path) -> None:
    specs = make_groups(range(8), num_generations=2)
    with TraceWriter(tmp_path) as writer, RolloutPool("wordle", _support.slow_solver, num_actors=1,
                                                      sessions_per_actor=4, max_retries=0, writer=writer) as pool:
        pids = _server_pids(ray_local, pool)
        stream = pool.as_completed(specs)
        rows = [next(stream)]
        os.killpg(pids[0], signal.SIGKILL)
        rows += list(stream)
        metrics = pool.metrics.summary()
    _exactly_once(rows, read_traces(tmp_path), 16)
    failed = [r for r in rows if not r.ok]
    assert failed and metrics["failed"] == len(failed) and metrics["retries"] == 0
    assert all(r.error is not None and r.error.type in ("ConnectionLost", "ConnectTimeout", "SessionFailed")
               for r in failed), [r.error for r in failed]
    assert metrics["ok"] == 16 - len(failed)


def test_policy_bugs_and_timeouts_become_failed_rows_without_hanging(ray_local: Any) -> None:
    specs = make_groups(range(2), num_generations=1)
    with RolloutPool("wordle", _support.broken, num_actors=1, sessions_per_actor=2) as pool:
        rows = pool.run(specs, timeout_s=60)
    assert [r.error.type for r in rows if r.error] == ["RuntimeError", "RuntimeError"]
    with RolloutPool("wordle", _support.stuck, num_actors=1, sessions_per_actor=2, episode_timeout_s=0.5) as pool:
        rows = pool.run(specs, timeout_s=60)
        assert pool.metrics.failed == 2 and pool.metrics.retries == 0
    assert all(not r.ok and r.error is not None and r.error.type == "EpisodeTimeout" for r in rows)


def test_staleness_cap_reruns_episodes_of_old_weights(ray_local: Any, tmp_path: Path) -> None:
    """The weights move while the actor's four sessions are playing under version 0 (held at a guess until the
    move: on a busy machine the whole batch could otherwise settle before it): those four are played again under
    version 1; a row settled before the move keeps version 0."""
    specs = make_groups(range(8), num_generations=1)
    hold, calls = tmp_path / "hold", tmp_path / "calls"
    calls.mkdir()
    with RolloutPool("wordle", _support.held_while_marked(str(tmp_path)), num_actors=1, sessions_per_actor=4,
                     policy_version=0, max_staleness=0) as pool, ThreadPoolExecutor(1) as driver:
        settled = pool.run(specs[:1])  # under version 0, before the weights move
        hold.touch()
        later = driver.submit(lambda: list(pool.as_completed(specs[1:])))
        try:
            deadline = time.monotonic() + 100
            while len(list(calls.iterdir())) < 4:  # one file per session waiting at its guess, under version 0
                assert time.monotonic() < deadline and not later.done(), "the four sessions never started"
                time.sleep(0.05)
            pool.set_policy_version(1)
        finally:
            hold.unlink()  # a failed wait must not leave the sessions held
        rows = [*settled, *later.result(timeout=300)]
        assert pool.metrics.stale_reruns >= 4
    versions = collections.Counter(r.policy.version for r in rows)
    assert versions == {0: 1, 1: 7}
    assert len({r.episode_id for r in rows}) == 8


def test_a_pool_whose_actors_all_died_fails_its_episodes_instead_of_hanging(ray_local: Any) -> None:
    specs = make_groups(range(6), num_generations=1)
    with RolloutPool("wordle", _support.solver, num_actors=1, sessions_per_actor=2, max_restarts=0,
                     max_retries=5, retry_backoff_s=0.0) as pool:
        ray_local.kill(pool.actors[0], no_restart=True)
        rows = pool.run(specs, timeout_s=60)
        assert pool.metrics.failed == 6 and pool.metrics.actor_failures >= 1
    assert [r.episode_id for r in rows] == [s.episode_id for s in specs]
    assert {r.error.type for r in rows if r.error} <= {"NoLiveActors", "ActorDiedError", "RayActorError"}
    assert any(r.error is not None and r.error.type == "NoLiveActors" for r in rows)


def test_a_pool_whose_env_servers_never_come_up_says_so_and_stops_what_it_started(ray_local: Any) -> None:
    env = "tests.pool._hanging_env:Never"
    pool = RolloutPool(env, _support.solver, num_actors=1, sessions_per_actor=1,
                       env_vars={"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "HANG_ON_IMPORT": "1"})
    with pytest.raises(PoolStartTimeout, match=r"not ready within 3 s .*start_timeout_s"):
        pool.start(timeout_s=3)
    with pytest.raises(PoolClosed):
        pool.run(make_groups(range(1)))
    assert not pool.actors  # stopped (killed by handle), not left holding a server
    deadline = time.monotonic() + 120
    while [p for p in psutil.process_iter(["cmdline"]) if env in " ".join(p.info["cmdline"] or ())]:
        assert time.monotonic() < deadline, "the env server that never came up was left running"
        time.sleep(0.2)
