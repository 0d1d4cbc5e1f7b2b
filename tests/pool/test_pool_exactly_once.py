"""Exactly-once through crashes at fixed points: actors and the driver killed (SIGKILL) where the code says.

Each kill is a fault token (``openenv_train.core.arm_fault``) that the first process reaching its point takes:
before a buffered row is flushed, with a shard's temp file written, with the shard renamed but not reported,
after an episode is played but not answered, and the driver in the middle of a manifest merge. Every test checks
the one promise: each submitted episode is stored once, and each row the pool yields is a stored row.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from openenv_train.core import FAULTS_ENV, arm_fault
from openenv_train.pool import RolloutPool, make_groups
from openenv_train.trace import TraceRow, TraceWriter, read_traces
from tests.pool import _support

ACTOR_POINTS = {  # write="actors": where an actor dies, and how many times
    "pool.actor.buffered": 2,  # rows buffered, no shard yet
    "trace.flush.tmp_written": 1,  # a shard's temp file written, not renamed
    "trace.flush.shard_written": 1,  # the shard in place, its manifest not replaced
    "pool.actor.flushed": 2,  # the shard complete, not yet reported to the driver
}


def _check_exactly_once(rows: list[TraceRow], run_dir: Path, episodes: int) -> None:
    stored = read_traces(run_dir)
    counts = collections.Counter(r.episode_id for r in stored)
    assert len(rows) == episodes and len({r.episode_id for r in rows}) == episodes
    assert len(counts) == episodes and set(counts.values()) == {1}, counts
    assert {r.trace_id for r in rows} == {r.trace_id for r in stored}  # each yielded row is the stored one
    assert all(r.ok and r.reward == 1.0 and r.steps for r in stored)


def test_actor_kills_at_every_shard_point_lose_and_duplicate_nothing(ray_local: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    faults = tmp_path / "faults"
    for point, count in ACTOR_POINTS.items():
        arm_fault(faults, point, count)
    monkeypatch.setenv(FAULTS_ENV, str(faults))
    specs = make_groups(range(16), num_generations=2)
    with TraceWriter(tmp_path / "run", flush_rows=3) as writer, RolloutPool(
            "wordle", _support.slow_solver, num_actors=2, sessions_per_actor=3, max_retries=20, max_restarts=50,
            writer=writer, write="actors") as pool:
        rows = list(pool.as_completed(specs))
        metrics = pool.metrics.summary()
    assert not list(faults.iterdir()), "every fault point was reached and killed its actor"
    _check_exactly_once(rows, tmp_path / "run", 32)
    assert metrics["actor_failures"] >= 1 and metrics["episodes"] == 32
    assert not (tmp_path / "run" / "staging").exists()


def test_actor_kills_after_playing_lose_and_duplicate_nothing_when_the_driver_writes(
        ray_local: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    faults = tmp_path / "faults"
    arm_fault(faults, "pool.actor.played", 4)  # episodes played, their outcomes never answered
    monkeypatch.setenv(FAULTS_ENV, str(faults))
    specs = make_groups(range(12), num_generations=2)
    with TraceWriter(tmp_path / "run", flush_rows=5) as writer, RolloutPool(
            "wordle", _support.slow_solver, num_actors=2, sessions_per_actor=3, max_retries=20, max_restarts=50,
            writer=writer) as pool:
        rows = list(pool.as_completed(specs))
    assert not list(faults.iterdir())
    _check_exactly_once(rows, tmp_path / "run", 24)


def _collect(out: Path, faults: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in (FAULTS_ENV, "RAY_ADDRESS")}
    if faults is not None:
        env[FAULTS_ENV] = str(faults)
    command = [sys.executable, "-m", "openenv_train.cli", "collect", "wordle", "--policy", "scripted", "-n", "10",
               "--num-generations", "2", "-o", str(out), "--write", "actors", "--num-actors", "2"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=240)
    finally:  # a driver killed by SIGKILL leaves its private Ray's processes: stop them by pid
        for child in psutil.Process().children(recursive=True):
            if child.pid != process.pid and _in_session(child, process.pid):
                child.kill()
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _in_session(child: psutil.Process, sid: int) -> bool:
    try:
        return os.getsid(child.pid) == sid
    except (ProcessLookupError, psutil.NoSuchProcess):
        return False


def test_a_driver_killed_mid_merge_resumes_with_every_episode_once(tmp_path: Path) -> None:
    out, faults = tmp_path / "run", tmp_path / "faults"
    arm_fault(faults, "trace.add_shard.moved")  # the shard moved into traces/, the manifest not yet replaced
    first = _collect(out, faults)
    assert first.returncode == -signal.SIGKILL, first.stderr[-2000:]
    arm_fault(faults, "trace.add_shard.merged")  # the manifest replaced, the rows not yet reported
    second = _collect(out, faults)
    assert second.returncode == -signal.SIGKILL, second.stderr[-2000:]
    assert not list(faults.iterdir())
    third = _collect(out, None)  # the same command again resumes the run
    assert third.returncode == 0, third.stderr[-2000:]
    stored = read_traces(out)
    counts = collections.Counter(r.episode_id for r in stored)
    assert len(counts) == 20 and set(counts.values()) == {1}, counts
    assert all(r.ok for r in stored)
    manifest = json.loads((out / "traces" / "manifest.json").read_text())
    assert manifest["rows"] == 20
    assert json.loads((out / "summary.json").read_text())["metrics"]["skipped"] > 0  # the third run skipped some


def test_stale_reruns_on_the_same_actor_store_the_accepted_attempt(ray_local: Any, tmp_path: Path) -> None:
    # One actor plays an episode twice: the first attempt's row is buffered there when the driver finds it stale
    # and sends it again. The actor must hold both rows; the driver keeps the second.
    specs = make_groups(range(8), num_generations=2)
    with TraceWriter(tmp_path, flush_rows=4) as writer, RolloutPool(
            "wordle", _support.slow_solver, num_actors=1, sessions_per_actor=4, writer=writer, write="actors",
            max_staleness=0, policy_version=0) as pool:
        rows = []
        for row in pool.as_completed(specs):
            rows.append(row)
            if len(rows) <= 2:  # every attempt out now is stale, to be played again
                pool.set_policy_version(len(rows))
        metrics = pool.metrics.summary()
    assert metrics["stale_reruns"] >= 1
    _check_exactly_once(rows, tmp_path, 16)
