"""``openenv-train eval``: run an Inspect AI eval (replay a trace dataset, or play an env live) and print metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ._app import app, fail


@app.command("eval")
def eval_command(
    target: Annotated[str, typer.Argument(help="A trace dataset folder (replayed) or a catalog env name (played).")],
    rubric: Annotated[str, typer.Option(help="Rubric that scores each episode.")] = "wordle",
    model: Annotated[str, typer.Option(help="Inspect model: openenv/tiny, openenv/<folder|url>, mockllm/model, ...")
                     ] = "openenv/tiny",
    episodes: Annotated[int, typer.Option(help="Live: episodes to play.")] = 2,
    seed: Annotated[int, typer.Option(help="Live: seed of the first episode.")] = 0,
    max_turns: Annotated[int, typer.Option(help="Live: most model turns per episode.")] = 8,
    epochs: Annotated[int, typer.Option(help="Live: plays of each episode; above 1 adds pass@1 and pass@epochs.")
                      ] = 1,
    env_url: Annotated[str | None, typer.Option(help="Live: play a running env server instead of starting one.")] = None,
    trace_dir: Annotated[Path | None, typer.Option(help="Live: also write each episode as a trace row here.")] = None,
    log_dir: Annotated[Path, typer.Option(help="Where Inspect writes its logs.")] = Path("logs"),
) -> None:
    """Evaluate with Inspect AI, without writing Inspect code; prints each component's mean and stderr."""
    from inspect_ai import eval as inspect_eval

    from ..evals import (
        live_task,
        openenv,  # noqa: F401  (the openenv model API, also without the entry point)
        replay_task,
    )

    if Path(target).is_dir():
        task = replay_task(target, rubric)
    else:
        task = live_task(target, rubric, episodes, seed, max_turns, env_url, str(trace_dir) if trace_dir else None,
                         epochs=epochs)
    logs = inspect_eval(task, model=model, log_dir=str(log_dir), display="none")
    log = logs[0]
    if log.status != "success":
        raise fail(f"eval {log.status}: {log.error.message if log.error else 'no error recorded'} (log: {log.location})")
    _print(Console(), log)


def _print(console: Console, log: Any) -> None:
    table = Table("component", "mean", "stderr")
    for entry in log.results.scores if log.results else []:
        metrics = entry.metrics
        mean, err = metrics.get("mean"), metrics.get("stderr")
        name = entry.name if entry.reducer in (None, "mean") else f"{entry.name} ({entry.reducer})"
        table.add_row(name, f"{mean.value:.4f}" if mean else "-", f"{err.value:.4f}" if err else "-")
    console.print(table)
    console.print(f"{len(log.samples or [])} sample(s); log: {log.location}")
