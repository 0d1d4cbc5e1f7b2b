"""``openenv-train score RUN --rubric wordle``: add reward components to a trace dataset, as a new version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ._app import app, fail


@app.command()
def score(
    source: Annotated[Path, typer.Argument(help="A run folder (RUN/traces/*.parquet) or an earlier scored version.")],
    rubric: Annotated[str, typer.Option(help="Rubric name (wordle, games, coding, reasoning_gym) or module:factory.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Folder of the new version (must not exist); "
                                                                       "default RUN/versions/vN.")] = None,
    concurrency: Annotated[int, typer.Option(help="Rows scored at once.")] = 16,
) -> None:
    """Score every row with a rubric; components become reward_<name> columns of a new dataset version."""
    from ..rubrics import get_rubric, score_dataset

    try:
        out = score_dataset(source, get_rubric(rubric), output=output, rubric_name=rubric, concurrency=concurrency)
    except FileExistsError as exc:
        raise fail(str(exc)) from None
    console = Console()
    info = json.loads((out / "version.json").read_text())
    console.print(f"scored {info['rows']} row(s) with {rubric}: {', '.join(info['columns'])}")
    console.print(f"new version: {out}")
