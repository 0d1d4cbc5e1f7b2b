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
    import json

    from ..envs import list_envs

    specs = list_envs()
    if as_json:
        typer.echo(json.dumps([{"name": s.name, "entry_point": s.entry_point, "description": s.description,
                                "tags": list(s.tags)} for s in specs], indent=2))
        return
    table = Table("name", "description", "entry point")
    for spec in specs:
        table.add_row(spec.name, spec.description, spec.entry_point)
    Console().print(table)
