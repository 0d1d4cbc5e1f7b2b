"""``openenv-train collect ENV --policy P -n N -o DIR``: roll out episodes through the Ray pool into a trace dataset."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..pool import PoolConfig
from ._app import app, err, fail
from ._options import config_values, with_config_options

_SCRIPTED = {"wordle": "wordle-solver", "openenv_train.envs.wordle:WordleEnvironment": "wordle-solver"}
"""Envs with a scripted solver, and the collect recipe's name for it."""


def _policy_spec(env: str, policy: str) -> str:
    """The collect recipe's ``policy`` for the CLI's ``--policy``; raises ValueError saying what to use instead."""
    if policy == "scripted":
        if env not in _SCRIPTED:
            raise ValueError(f"{env!r} has no scripted solver (only {', '.join(sorted(_SCRIPTED))} do); use --policy "
                             "random, a local model folder, or an OpenAI-compatible http(s):// URL")
        return _SCRIPTED[env]
    if policy == "random" or policy.startswith(("http://", "https://")):
        return policy
    if Path(policy).is_dir():
        return str(Path(policy).resolve())
    raise ValueError(f"--policy {policy!r} is not scripted, random, an existing model folder nor an http(s):// URL "
                     "(build a tiny offline model with openenv_train.policy.build_tiny_model(path))")


#: The pool options of ``collect`` (PoolConfig's fields, help written there), with the command's defaults.
POOL_OPTIONS = {"num_actors": 1, "sessions_per_actor": 4, "max_turns": 12, "episode_timeout_s": 120.0,
                "ray_address": None, "show_progress": False, "server_capacity": None, "write": "driver"}
_POOL_FLAGS = {"episode_timeout_s": "--episode-timeout", "show_progress": "--progress"}


@app.command()
@with_config_options(PoolConfig, at=6, defaults=POOL_OPTIONS, flags=_POOL_FLAGS)
def collect(
    env: Annotated[str, typer.Argument(help="Catalog name, package.module:ClassName, a running server's URL, or a "
                                            "fleet of servers: URL1,URL2,... or a file listing URLs (one a line).")],
    policy: Annotated[str, typer.Option(help="scripted (the env's solver: wordle), random (random valid actions or "
                                             "tool calls), a local model folder, or an OpenAI-compatible URL.")],
    episodes: Annotated[int, typer.Option("-n", "--episodes", help="Episodes to play (reset seeds SEED..SEED+N-1).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Run folder; rows go to DIR/traces/*.parquet, "
                                                                 "DIR/summary.json. Episodes already there are skipped.")],
    num_generations: Annotated[int, typer.Option(help="Episodes per seed (GRPO groups); -n counts seeds then.")] = 1,
    seed: Annotated[int, typer.Option(help="First reset seed.")] = 0,
    max_tokens: Annotated[int, typer.Option(help="Most tokens per model reply (model and URL policies).")] = 128,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (model and URL policies).")] = 1.0,
    **pool_options: Any,
) -> None:
    """Play N episodes of ENV with a policy in the Ray rollout pool; write TrainingTrace rows (Parquet).

    Exit status 0 when every episode finished, 1 when some failed (their rows have ok=false), 2 for bad usage.
    """
    from ..recipes.collect import CollectConfig, run

    values = config_values(PoolConfig, pool_options)
    own = {f.name for f in dataclasses.fields(CollectConfig)}  # the recipe's own pool options; the rest go in pool
    pool: dict[str, Any] = {k: v for k, v in values.items() if k not in own and v is not None}
    if ":" in env:  # a module:Class of the working directory: the env servers import it from there
        sys.path.insert(0, os.getcwd())
        pool["env_vars"] = {"PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    if policy not in ("scripted", "random"):
        pool["sampling"] = {"max_tokens": max_tokens, "temperature": temperature}
    try:
        spec = _policy_spec(env, policy)
        cfg = CollectConfig(name=output.resolve().name, output_dir=str(output.resolve().parent), env=env, policy=spec,
                            tasks=episodes, num_generations=num_generations, seed=seed, pool=pool,
                            **{k: v for k, v in values.items() if k in own})
    except ValueError as exc:
        raise fail(str(exc), code=2) from None
    try:
        summary = run(cfg)
    except (ValueError, FileNotFoundError, OSError) as exc:
        raise fail(str(exc)) from None
    from rich.console import Console

    Console(stderr=True).print(summary.pop("table"))
    failed = summary["metrics"]["failed"]
    err.print(f"mean reward {summary['mean_reward']}, failed {failed}")
    typer.echo(f"wrote {summary['rows']} rows to {summary['output']}/traces")
    raise typer.Exit(0 if failed == 0 else 1)
