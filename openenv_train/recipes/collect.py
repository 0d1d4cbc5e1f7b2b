"""Collect rollouts with the Ray pool and write them as TrainingTrace rows to a run directory.

Runs locally (a local Ray) or as a Ray job on a cluster::

    python -m openenv_train.recipes.collect [--config configs/collect.yaml] [key=value ...]
    ray job submit --address http://HEAD:8265 -- python -m openenv_train.recipes.collect output_dir=/shared/runs

Output: ``<output_dir>/<name>/traces/*.parquet`` (resumable: written episodes are skipped) and ``summary.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._config import load_config

__all__ = ["CollectConfig", "main", "run"]


@dataclass
class CollectConfig:
    """Options of the collection job."""

    name: str = "collect"
    output_dir: str = "runs"
    env: str = "wordle"
    """Catalog name, ``module:Class``, or a server URL."""
    policy: str = "wordle-solver"
    """``wordle-solver``, ``module:callable`` (scripted), or an OpenAI-compatible URL."""
    tasks: int = 8
    """Groups to run; task i resets with seed ``seed + i``."""
    num_generations: int = 2
    seed: int = 0
    num_actors: int = 2
    sessions_per_actor: int = 4
    max_turns: int = 12
    episode_timeout_s: float = 120.0
    max_retries: int = 2
    ray_address: str | None = None
    show_progress: bool = True
    pool: dict[str, Any] = field(default_factory=dict)
    """More :class:`~openenv_train.pool.PoolConfig` fields."""

    def __post_init__(self) -> None:
        if self.tasks < 1 or self.num_generations < 1:
            raise ValueError(f"tasks and num_generations must be >= 1, got {self.tasks} and {self.num_generations}")


def _policy(spec: str) -> Any:
    if spec.startswith(("http://", "https://")):
        return spec
    if spec == "wordle-solver":
        from ..envs.wordle.solver import WordleSolver

        return WordleSolver().act
    module, sep, attr = spec.partition(":")
    if not sep:
        raise ValueError(f"policy {spec!r}: use 'wordle-solver', 'module:callable' or an http(s):// URL")
    return getattr(importlib.import_module(module), attr)


def run(cfg: CollectConfig) -> dict[str, Any]:
    """Run every episode, write the traces, return the summary."""
    from ..harbor import TraceWriter
    from ..pool import PoolConfig, RolloutPool, make_groups

    out = Path(cfg.output_dir) / cfg.name
    pool_cfg = PoolConfig(num_actors=cfg.num_actors, sessions_per_actor=cfg.sessions_per_actor, max_turns=cfg.max_turns,
                          episode_timeout_s=cfg.episode_timeout_s, max_retries=cfg.max_retries, run_id=cfg.name,
                          ray_address=cfg.ray_address, show_progress=cfg.show_progress, **cfg.pool)
    specs = make_groups(range(cfg.seed, cfg.seed + cfg.tasks), cfg.num_generations)
    with TraceWriter(out, resume=True) as writer, RolloutPool(cfg.env, _policy(cfg.policy), config=pool_cfg,
                                                              writer=writer) as pool:
        rows = pool.run(specs)
        metrics = pool.metrics
    summary = {"config": asdict(cfg), "metrics": metrics.summary(), "rows": len(rows),
               "mean_reward": sum(r.reward or 0.0 for r in rows) / len(rows) if rows else None, "output": str(out)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    summary["table"] = metrics.table()
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--config", help="YAML file of CollectConfig options")
    parser.add_argument("overrides", nargs="*", help="key=value options, e.g. tasks=32 num_actors=4")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(CollectConfig, args.config, args.overrides)
    except (ValueError, OSError) as exc:
        parser.error(str(exc))
    summary = run(cfg)
    from rich.console import Console

    Console().print(summary.pop("table"))
    print(f"wrote {summary['rows']} rows to {summary['output']}/traces (failed: {summary['metrics']['failed']})")
    return 0 if summary["metrics"]["failed"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
