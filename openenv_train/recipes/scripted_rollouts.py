"""Serve envs in subprocesses and play many concurrent episodes with scripted policies.

Wordle is played by the expert solver (``openenv_train.envs.wordle.solver``), the counter by a greedy or
random policy, echo by calling its tools.

The project's main job until the Wordle GRPO recipe lands: it exercises the whole
runtime (providers, server, typed and MCP clients, concurrency) and writes what it saw::

    python -m openenv_train.recipes.scripted_rollouts [--config configs/scripted_rollouts.yaml] [key=value ...]

Output: ``runs/<name>/episodes.jsonl`` (one row per episode) and ``runs/<name>/summary.json``.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ._config import config_from_argv

__all__ = ["RolloutConfig", "main", "run"]


@dataclass
class RolloutConfig:
    """Options of the scripted rollout job."""

    name: str = "scripted-rollouts"
    output_dir: str = "runs"
    wordle_episodes: int = 100
    counter_episodes: int = 200
    echo_episodes: int = 50
    concurrency: int = 32
    max_steps: int = 50
    policy: str = "greedy"  # greedy reaches the target exactly; random may overshoot
    max_delta: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        if self.policy not in ("greedy", "random"):
            raise ValueError(f"policy must be 'greedy' or 'random', got {self.policy!r}")
        if self.concurrency < 1 or self.max_delta < 1:
            raise ValueError("concurrency and max_delta must be >= 1")


def _counter_action(policy: str, value: int, target: int, max_delta: int, rng: random.Random) -> int:
    if policy == "greedy":
        return max(1, min(max_delta, target - value))
    return rng.randint(1, max_delta)


async def _counter_episode(client: Any, cfg: RolloutConfig, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    obs = (await client.reset(seed=seed)).observation
    steps, total = [], 0.0
    for _ in range(cfg.max_steps):
        delta = _counter_action(cfg.policy, obs["value"], obs["target"], cfg.max_delta, rng)
        result = await client.step({"delta": delta})
        obs = result.observation
        total += result.reward or 0.0
        steps.append({"action": {"delta": delta}, "reward": result.reward, "done": result.done, "value": obs["value"]})
        if result.done:
            break
    return {"env": "counter", "seed": seed, "target": obs["target"], "steps": steps, "total_reward": total,
            "won": total > 0, "ok": True}


async def _wordle_episode(client: Any, cfg: RolloutConfig, seed: int) -> dict[str, Any]:
    from ..envs.wordle.solver import WordleSolver

    solver = _SOLVERS.setdefault("wordle", WordleSolver())
    result = await client.reset(seed=seed)
    steps: list[dict[str, Any]] = []
    while not result.done and len(steps) < cfg.max_steps:
        action = solver.act(result.observation)
        result = await client.step(action)
        steps.append({"action": action, "reward": result.reward, "done": result.done,
                      "feedback": (result.observation.get("feedback") or [None])[-1]})
    won = result.reward == 1.0
    return {"env": "wordle", "seed": seed, "steps": steps, "total_reward": result.reward or 0.0, "won": won,
            "guesses": len(steps), "ok": True}


_SOLVERS: dict[str, Any] = {}


async def _echo_episode(client: Any, cfg: RolloutConfig, seed: int) -> dict[str, Any]:
    await client.reset(seed=seed)
    tools = [t.name for t in await client.list_tools(use_cache=False)]
    message = f"episode {seed}"
    echoed = await client.call_tool("echo_message", message=message)
    measured = await client.call_tool("echo_with_length", message=message)
    won = echoed == message and measured == {"message": message, "length": len(message)}
    return {"env": "echo", "seed": seed, "tools": tools, "steps": [echoed, measured], "total_reward": float(won),
            "won": won, "ok": True}


async def _play(env: str, episodes: int, cfg: RolloutConfig, rows: list[dict[str, Any]], progress: Any) -> None:
    from ..client import GenericEnvClient, MCPToolClient
    from ..launch import LocalProcessProvider

    provider = LocalProcessProvider(env, max_sessions=cfg.concurrency + 8)
    endpoint = await provider.start()
    client_cls = MCPToolClient if env == "echo" else GenericEnvClient
    play = {"echo": _echo_episode, "wordle": _wordle_episode, "counter": _counter_episode}[env]
    seeds = iter(range(cfg.seed, cfg.seed + episodes))
    task = progress.add_task(f"{env} episodes", total=episodes)

    async def worker() -> None:
        async with client_cls(endpoint.base_url) as client:
            for seed in seeds:
                try:
                    row = await play(client, cfg, seed)
                except Exception as exc:  # a failed episode is a row, not a crash
                    row = {"env": env, "seed": seed, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                           "total_reward": 0.0, "won": False, "steps": []}
                rows.append(row)
                progress.advance(task)

    try:
        await asyncio.gather(*(worker() for _ in range(min(cfg.concurrency, episodes))))
    finally:
        await provider.stop()


def _summary(rows: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    by_env: dict[str, Any] = {}
    for env in sorted({r["env"] for r in rows}):
        mine = [r for r in rows if r["env"] == env]
        steps = sum(len(r["steps"]) for r in mine)
        by_env[env] = {
            "episodes": len(mine),
            "ok": sum(r["ok"] for r in mine),
            "win_rate": sum(r["won"] for r in mine) / len(mine),
            "mean_reward": sum(r["total_reward"] for r in mine) / len(mine),
            "steps": steps,
        }
    return {"seconds": round(seconds, 3), "envs": by_env}


async def run(cfg: RolloutConfig) -> dict[str, Any]:
    """Play every episode, write the run directory, return the summary."""
    from rich.progress import Progress

    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    with Progress() as progress:
        for env, episodes in (("wordle", cfg.wordle_episodes), ("counter", cfg.counter_episodes),
                              ("echo", cfg.echo_episodes)):
            if episodes:
                await _play(env, episodes, cfg, rows, progress)
    summary = {"config": asdict(cfg), **_summary(rows, time.perf_counter() - start)}
    out = Path(cfg.output_dir) / cfg.name
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "episodes.jsonl", "w") as f:
        for row in sorted(rows, key=lambda r: (r["env"], r["seed"])):
            f.write(json.dumps(row) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    summary["output"] = str(out)
    return summary


def main(argv: list[str] | None = None) -> int:
    cfg = config_from_argv(RolloutConfig, argv, module="openenv_train.recipes.scripted_rollouts", doc=__doc__,
                           example="policy=random concurrency=64")
    summary = asyncio.run(run(cfg))
    from rich.console import Console
    from rich.table import Table

    table = Table("env", "episodes", "ok", "win rate", "mean reward", "steps", title=f"{cfg.name} ({summary['seconds']} s)")
    for env, s in summary["envs"].items():
        table.add_row(env, str(s["episodes"]), str(s["ok"]), f"{s['win_rate']:.2f}", f"{s['mean_reward']:.3f}", str(s["steps"]))
    Console().print(table)
    print(f"wrote {summary['output']}/episodes.jsonl and summary.json")
    return 0 if all(s["ok"] == s["episodes"] for s in summary["envs"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
