"""``openenv-train catalog``: list the built-in environments, grouped by family."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ._app import app

#: Families in the order the listing shows them; any other family comes after, alphabetically.
FAMILY_ORDER = ("games", "board games", "card games", "puzzles", "grid worlds", "finance", "tools", "coding",
                "browser", "reasoning", "test")


def _family_rank(family: str) -> tuple[int, str]:
    return (FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER), family)


@app.command()
def catalog(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    family: Annotated[str | None, typer.Option(help="Only this family (games, finance, tools, ...).")] = None,
) -> None:
    """List the environments of the built-in catalog by family, with the extra each one needs."""
    import dataclasses
    import json

    from ..envs import list_envs

    specs = [s for s in list_envs() if family is None or s.family == family]
    if family is not None and not specs:
        known = sorted({s.family for s in list_envs()}, key=_family_rank)
        raise typer.BadParameter(f"no family {family!r}; families: {', '.join(known)}", param_hint="--family")
    if as_json:
        typer.echo(json.dumps([{**dataclasses.asdict(s), "install": s.install} for s in specs], indent=2))
        return
    console = Console(width=max(Console().width, 160))
    for name in sorted({s.family for s in specs}, key=_family_rank):
        group = [s for s in specs if s.family == name]
        table = Table("name", "description", "action", "reward", "needs", show_lines=True,
                      title=f"{name} ({len(group)})", title_justify="left")
        for spec in group:
            needs = spec.install or (", ".join(spec.dependencies) or "-")
            # escape: actions such as '{"message": "[crane]"}' are not rich markup
            table.add_row(*(escape(cell) for cell in (spec.name, spec.description, spec.action, spec.reward, needs)))
        console.print(table)
    console.print(f"{len(specs)} environments")
