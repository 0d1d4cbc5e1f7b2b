"""Rollout throughput: a sequential loop, an asyncio loop, and the Ray pool with 1, 2 and 4 actors.

All modes play the same counter episodes with the same greedy scripted policy, on two envs:

- ``io``: every step sleeps 50 ms (an env waiting on I/O), served as ``benchmarks.pool_throughput:SleepyCounter``;
- ``cpu``: the plain counter (CPU-light: a step is a few microseconds of env work).

Reports episodes/s per mode (pool runs with one episode per Ray call, and ``xN`` with ``episodes_per_call=N``)
and the pool's overhead per episode against the asyncio loop at the same concurrency. Targets: the
pool >= 10x sequential on ``io``; the best pool within 20% of the asyncio loop on ``cpu``; overhead < 2 ms
per episode::

    python benchmarks/pool_throughput.py [--sessions 32] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from openenv_train.envs.counter import CounterAction, CounterEnvironment, CounterObservation

ROOT = Path(__file__).resolve().parents[1]
IO_ENV = "benchmarks.pool_throughput:SleepyCounter"


class SleepyCounter(CounterEnvironment):
    """The counter, but every step waits 50 ms (without blocking the server's loop)."""

    name = "sleepy_counter"

    async def step(self, action: CounterAction) -> CounterObservation:  # type: ignore[override]
        await asyncio.sleep(0.05)
        return super().step(action)


def greedy(observation: Any) -> dict[str, int]:
    """Step straight to the target, at most 3 at a time."""
    return {"delta": max(1, min(3, observation["target"] - observation["value"]))}


async def _episode(client: Any, seed: int) -> None:
    result = await client.reset(seed=seed)
    while not result.done:
        result = await client.step(greedy(result.observation))


async def _local_modes(env: str, episodes: int, sessions: int, sequential_episodes: int) -> dict[str, float]:
    from openenv_train.client import GenericEnvClient
    from openenv_train.launch import LocalProcessProvider

    provider = LocalProcessProvider(env, max_sessions=sessions + 4, env_vars={"PYTHONPATH": str(ROOT)})
    endpoint = await provider.start()
    try:
        async with GenericEnvClient(endpoint.base_url) as client:
            await _episode(client, 0)  # warm up
            start = time.perf_counter()
            for seed in range(sequential_episodes):
                await _episode(client, seed)
            sequential = sequential_episodes / (time.perf_counter() - start)
        seeds = iter(range(episodes))

        async def worker() -> None:
            async with GenericEnvClient(endpoint.base_url) as c:
                for seed in seeds:
                    await _episode(c, seed)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(sessions)))
        concurrent = episodes / (time.perf_counter() - start)
    finally:
        await provider.stop()
    return {"sequential": sequential, "asyncio": concurrent}


def _pool_mode(env: str, episodes: int, actors: int, sessions: int, per_call: int) -> float:
    from openenv_train.pool import RolloutPool, make_groups

    per_actor = max(1, sessions // actors)
    with RolloutPool(env, greedy, num_actors=actors, sessions_per_actor=per_actor, actor_num_cpus=0,
                     env_vars={"PYTHONPATH": str(ROOT)}, max_retries=0, episodes_per_call=per_call) as pool:
        pool.run(make_groups(range(actors * per_actor), prefix="warm"))
        start = time.perf_counter()
        rows = pool.run(make_groups(range(episodes)), ordered=False)
        seconds = time.perf_counter() - start
    assert len(rows) == episodes and all(r.ok for r in rows), [r.error for r in rows if not r.ok][:3]
    return episodes / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=32, help="concurrent sessions (asyncio loop and pool in total)")
    parser.add_argument("--batch", type=int, default=8, help="episodes_per_call of the batched pool runs")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    import ray

    sys.path.insert(0, str(ROOT))
    ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    plans = {"io": (IO_ENV, 320, 10), "cpu": ("counter", 3000, 300)}
    results: dict[str, dict[str, float]] = {}
    for name, (env, episodes, sequential_episodes) in plans.items():
        figures = asyncio.run(_local_modes(env, episodes, args.sessions, sequential_episodes))
        for per_call in (1, args.batch):
            for actors in (1, 2, 4):
                suffix = "" if per_call == 1 else f"x{per_call}"
                figures[f"pool-{actors}{suffix}"] = _pool_mode(env, episodes, actors, args.sessions, per_call)
        best_pool = max(v for k, v in figures.items() if k.startswith("pool"))
        figures["pool/sequential"] = best_pool / figures["sequential"]
        figures["best pool/asyncio"] = best_pool / figures["asyncio"]
        figures["overhead ms/episode (pool-1 vs asyncio)"] = 1000 * (1 / figures["pool-1"] - 1 / figures["asyncio"])
        figures[f"overhead ms/episode (pool-1x{args.batch} vs asyncio)"] = 1000 * (
            1 / figures[f"pool-1x{args.batch}"] - 1 / figures["asyncio"])
        results[name] = figures
        print(f"{name}: " + ", ".join(f"{k}={v:.2f}" for k, v in figures.items()), flush=True)
    ray.shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
