"""Rollout pool soak: rows lost and duplicated through hundreds of kills (targets: 0 and 0 in every mode).

Modes (each plays Wordle episodes with the expert solver until its kills are done, then drains the pool):

- ``actors``: ``write="actors"``; actors SIGKILLed at fixed points (fault tokens, ``openenv_train.core``): a row
  buffered, mid-way through a call, a shard's temp file written, a shard renamed but not in its manifest, a
  shard flushed but not reported.
- ``driver``: ``write="driver"``; actors killed mid-way through a call and after playing a call's episodes,
  before answering.
- ``fleet``: a fleet of ``openenv-train serve`` processes; one server SIGKILLed by pid and started again on its
  port.
- ``raylet``: the 3-node loopback cluster of ``tests/pool/loopback_cluster.py`` (head + 2 workers); the raylet
  of a worker node that hosts an actor SIGKILLed and a new worker node started.

A kill is triggered by the pool's progress (every ``--every`` rows a fault token is laid or a process killed;
a token kills the next actor that reaches its point in the code), never by the clock. The
report: episodes submitted, rows yielded, rows stored, lost (submitted, not stored, or yielded and not stored)
and duplicated (an episode stored twice), kills done, wall time.

    python benchmarks/pool_soak.py --mode actors --kills 200
    python benchmarks/pool_soak.py --mode fleet --kills 30 --every 8
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from openenv_train.core import FAULTS_ENV, arm_fault
from openenv_train.envs.wordle.solver import WordleSolver
from openenv_train.launch import LocalProcessProvider
from openenv_train.pool import EpisodeSpec, RolloutPool, make_groups
from openenv_train.trace import TraceWriter, read_traces

ROOT = Path(__file__).resolve().parents[1]
POINTS = {
    "actors": ["pool.actor.buffered", "pool.actor.attempted", "trace.flush.tmp_written",
               "trace.flush.shard_written", "pool.actor.flushed"],
    "driver": ["pool.actor.attempted", "pool.actor.played"],
}


def policy(observation: Any) -> dict[str, str]:
    """The Wordle expert, thinking 20 ms a guess (episodes overlap the kills)."""
    time.sleep(0.02)
    return WordleSolver().act(observation)


def specs(stop: threading.Event) -> Iterator[EpisodeSpec]:
    """Groups of two episodes, until ``stop`` is set."""
    for task in itertools.count():
        if stop.is_set():
            return
        yield from make_groups([task], num_generations=2, prefix=f"t{task}g")


def count(run_dir: Path, yielded: list[str], submitted: set[str]) -> dict[str, int]:
    stored = collections.Counter(r.episode_id for r in read_traces(run_dir))
    return {"submitted": len(submitted), "yielded": len(yielded), "stored": sum(stored.values()),
            "lost": len((submitted - set(stored)) | (set(yielded) - set(stored))),
            "duplicated": sum(n - 1 for n in stored.values() if n > 1),
            "yielded_twice": len(yielded) - len(set(yielded))}


def drive(pool: RolloutPool, stop: threading.Event, after_row: Callable[[int], None] | None = None,
          ) -> tuple[list[str], set[str]]:
    """Run episodes until ``stop``; the episode ids yielded and submitted."""
    yielded: list[str] = []
    submitted: set[str] = set()

    def source() -> Iterator[EpisodeSpec]:
        for spec in specs(stop):
            submitted.add(spec.episode_id)
            yield spec

    for row in pool.as_completed(source()):
        yielded.append(row.episode_id)
        if len(yielded) % 50 == 0:
            print(f"{len(yielded)} rows, {pool.metrics.actor_failures} actor failures", file=sys.stderr, flush=True)
        if after_row is not None:
            after_row(len(yielded))
    return yielded, submitted


def fault_mode(mode: str, kills: int, every: int, work: Path, num_actors: int) -> dict[str, Any]:
    import ray

    from openenv_train.pool import start_private_ray

    folder = work / "faults"
    folder.mkdir()
    os.environ[FAULTS_ENV] = str(folder)  # before Ray starts: the workers inherit it
    points, laid, stop = itertools.cycle(POINTS[mode]), [0], threading.Event()

    def taken() -> int:
        return laid[0] - len(list(folder.iterdir()))

    def after_row(n: int) -> None:
        if n % every == 0 and laid[0] < kills:  # one token per ``every`` rows; an actor dies where it takes it
            arm_fault(folder, next(points))
            laid[0] += 1
        if taken() >= kills:
            stop.set()

    start_private_ray(2, log_to_driver=False)
    try:
        with TraceWriter(work / "run", flush_rows=4) as writer, RolloutPool(
                "wordle", policy, num_actors=num_actors, sessions_per_actor=4, max_retries=10_000,
                max_restarts=100_000, retry_backoff_s=0.05, max_queued=16, writer=writer, write=mode) as pool:
            yielded, submitted = drive(pool, stop, after_row)
            metrics = pool.metrics.summary()
    finally:
        del os.environ[FAULTS_ENV]
        ray.shutdown()
    return {**count(work / "run", yielded, submitted), "kills": taken(),
            "actor_failures": metrics["actor_failures"], "retries": metrics["retries"]}


def fleet_mode(kills: int, every: int, work: Path, num_actors: int) -> dict[str, Any]:
    import ray

    from openenv_train.pool import start_private_ray

    servers = [LocalProcessProvider("wordle", token="") for _ in range(3)]
    urls = [asyncio.run(server.start()).base_url for server in servers]
    done, stop = [0], threading.Event()

    def after_row(n: int) -> None:
        if n % every == 0 and done[0] < kills:
            server = servers[done[0] % len(servers)]
            server.kill()
            # back on the same port while the pool carries on
            threading.Thread(target=asyncio.run, args=(server.restart(),), daemon=True).start()
            done[0] += 1
        if done[0] >= kills:
            stop.set()

    start_private_ray(2, log_to_driver=False)
    try:
        with TraceWriter(work / "run", flush_rows=4) as writer, RolloutPool(
                urls, policy, num_actors=num_actors, sessions_per_actor=4,
                max_retries=10_000, retry_backoff_s=0.05, max_queued=16, writer=writer) as pool:
            yielded, submitted = drive(pool, stop, after_row)
            metrics = pool.metrics.summary()
    finally:
        ray.shutdown()
        for server in servers:
            asyncio.run(server.stop())
    return {**count(work / "run", yielded, submitted), "kills": done[0], "retries": metrics["retries"]}


def raylet_mode(kills: int, every: int, work: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from tests.pool.loopback_cluster import LoopbackCluster

    if "ray" in sys.modules:
        raise RuntimeError("ray was imported before the cluster's environment was set")
    cluster = LoopbackCluster(workers=2, worker_resources={"rollout": 2}).start()
    done, stop = [0], threading.Event()
    saved = dict(os.environ)
    os.environ.update(cluster.env)  # before Ray is imported: its loopback switch is read on import
    try:
        import ray

        ray.init(address=cluster.gcs_address, log_to_driver=False)
        with TraceWriter(work / "run", flush_rows=4) as writer, RolloutPool(
                "wordle", policy, num_actors=2, sessions_per_actor=4, ray_address=cluster.gcs_address,
                actor_resources={"rollout": 1}, actor_scheduling="spread", max_retries=10_000,
                max_restarts=100_000, retry_backoff_s=0.5, max_queued=16, writer=writer) as pool:

            def after_row(n: int) -> None:
                if n % every == 0 and done[0] < kills:
                    # the node of the actor that answers first (a restarting one answers once it is up again)
                    ready, _ = ray.wait([a.ready.remote() for a in pool.actors], num_returns=1, timeout=600)
                    host = ray.get(ready[0])["node_id"] if ready else None
                    node = next((nd for nd in cluster.worker_nodes if nd.node_id == host), None)
                    if node is not None and node.process.poll() is None:
                        cluster.kill_raylet(node)
                        cluster.add_worker()  # the cluster keeps two worker nodes
                        done[0] += 1
                if done[0] >= kills:
                    stop.set()

            yielded, submitted = drive(pool, stop, after_row)
            metrics = pool.metrics.summary()
    finally:
        if "ray" in sys.modules:
            sys.modules["ray"].shutdown()
        os.environ.clear()
        os.environ.update(saved)
        cluster.stop()
    return {**count(work / "run", yielded, submitted), "kills": done[0], "retries": metrics["retries"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=["actors", "driver", "fleet", "raylet"], required=True)
    parser.add_argument("--kills", type=int, default=200, help="Kills to make (actors, servers or raylets).")
    parser.add_argument("--every", type=int, default=2, help="Rows between kills (actors and driver: between "
                        "fault tokens laid; each is taken by the next actor that reaches its point).")
    parser.add_argument("--actors", type=int, default=4, help="Ray actors (actors, driver and fleet modes).")
    parser.add_argument("--json", type=Path, help="Also write the report here.")
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pool-soak") as tmp:
        work = Path(tmp)
        if args.mode in POINTS:
            report = fault_mode(args.mode, args.kills, args.every, work, args.actors)
        elif args.mode == "fleet":
            report = fleet_mode(args.kills, args.every, work, args.actors)
        else:
            report = raylet_mode(args.kills, args.every, work)
    report = {"mode": args.mode, **report, "wall_s": round(time.perf_counter() - started, 1)}
    print(json.dumps(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    sys.exit(0 if report["lost"] == 0 and report["duplicated"] == 0 and report["yielded_twice"] == 0 else 1)


if __name__ == "__main__":
    main()
