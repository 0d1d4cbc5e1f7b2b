"""``openenv-train catalog``: list the built-in environments."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ._app import app


@app.command()
def catalog(as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False) -> None:
    """List the environments of the built-in catalog."""
    import dataclasses
    import json

    from ..envs import list_envs

    specs = list_envs()
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(s) for s in specs], indent=2))
        return
    table = Table("name", "description", "action", "reward", "dependencies", show_lines=True)
    for spec in specs:
        table.add_row(spec.name, spec.description, spec.action, spec.reward, ", ".join(spec.dependencies) or "-")
    Console(width=max(Console().width, 160)).print(table)
