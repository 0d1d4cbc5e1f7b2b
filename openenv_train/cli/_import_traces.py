"""``openenv-train import-traces PATH -o RUN``: OpenEnv harness ``collect`` output as a trace dataset of ours."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._app import app, fail


@app.command("import-traces")
def import_traces(
    source: Annotated[Path, typer.Argument(help="OpenEnv's collect output folder (results.jsonl) or the jsonl file.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Run folder to write traces/ into.")],
    env: Annotated[str | None, typer.Option(help="Env name of the rows (default: from metadata.json).")] = None,
) -> None:
    """Write OpenEnv collect records as TrainingTrace rows (Parquet) for SFT, rubrics, evals and the viewer.

    Exit status 0 on success, 1 when the source is missing or a record does not parse.
    """
    from ..integrations.openenv_traces import import_openenv_collect

    try:
        count = import_openenv_collect(source, output, env=env)
    except (OSError, ValueError) as exc:
        raise fail(str(exc)) from None
    typer.echo(f"imported {count} episode(s) from {source} into {output / 'traces'}")
    typer.echo(f"next: python -m openenv_train.recipes.sft_from_traces traces={output}   or: openenv-train view {output}")
