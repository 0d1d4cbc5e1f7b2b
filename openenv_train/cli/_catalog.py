"""``openenv-train catalog``: list the built-in environments, grouped by family; ``catalog build``/``inspect`` and
``discover``: OpenEnv's metadata-only catalog snapshots of a Git repository's env folders (``_catalog_snapshot``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ._app import app, err, fail

#: Families in the order the listing shows them; any other family comes after, alphabetically.
FAMILY_ORDER = ("games", "board games", "card games", "puzzles", "grid worlds", "finance", "tools", "coding",
                "browser", "reasoning", "test")


def _family_rank(family: str) -> tuple[int, str]:
    return (FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER), family)


catalog_app = typer.Typer(invoke_without_command=True, help="List the built-in environments by family (no "
                          "subcommand), or build and inspect OpenEnv catalog snapshots of a Git repository.")
app.add_typer(catalog_app, name="catalog")


@catalog_app.callback()
def catalog(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    family: Annotated[str | None, typer.Option(help="Only this family (games, finance, tools, ...).")] = None,
) -> None:
    """List the environments of the built-in catalog by family, with the extra each one needs."""
    import dataclasses

    if ctx.invoked_subcommand is not None:
        return

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


@catalog_app.command("build")
def build(
    repository: Annotated[Path, typer.Option(help="Local Git repository to read (committed files only).")],
    repository_uri: Annotated[str, typer.Option(help="Its GitHub clone URI, https://github.com/OWNER/REPO.git.")],
    publisher: Annotated[str, typer.Option(help="The DNS name you publish the catalog under (example.org).")],
    output: Annotated[Path, typer.Option(help="Snapshot JSON to write.")],
    revision: Annotated[str, typer.Option(help="Commit or ref to read.")] = "HEAD",
    root: Annotated[str, typer.Option(help="Folder whose direct children are env folders.")] = "envs",
    namespace: Annotated[str, typer.Option(help="Your namespace in the identifiers.")] = "openenv",
) -> None:
    """Write a versioned, metadata-only snapshot (OpenEnv's schema) of the env folders at one revision; no env code
    runs. Exit 1 when an entry failed (the snapshot is written, marked incomplete)."""
    from ._catalog_snapshot import CatalogError, build_snapshot

    try:
        snapshot = build_snapshot(repository, repository_uri=repository_uri, publisher=publisher, namespace=namespace,
                                  revision=revision, root=root)
    except CatalogError as exc:
        raise fail(str(exc)) from None
    output.write_text(json.dumps(snapshot, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    err.print(f"{len(snapshot['entries'])} records, snapshot {snapshot['digest']}, "
              f"complete={str(snapshot['complete']).lower()}", markup=False)
    for issue in snapshot["issues"]:
        err.print(f"{issue['severity']}: {issue['path']}: {issue['message']}", markup=False)
    if not snapshot["complete"]:
        raise typer.Exit(1)


@catalog_app.command("inspect")
def inspect(
    identifier: Annotated[str, typer.Argument(help="An entry's exact identifier (urn:air:...).")],
    catalog: Annotated[Path, typer.Option(help="The snapshot file.")],
) -> None:
    """Print one entry of a snapshot, whole (nothing is fetched)."""
    from ._catalog_snapshot import CatalogError, load_snapshot, resolve

    try:
        entry = resolve(load_snapshot(catalog), identifier)
    except CatalogError as exc:
        raise fail(str(exc)) from None
    typer.echo(json.dumps(entry, indent=2, ensure_ascii=False))


@app.command()
def discover(
    query: Annotated[str, typer.Argument(help="The task to find an environment for.")] = "",
    catalog: Annotated[Path | None, typer.Option(help="A snapshot from 'catalog build' (or OpenEnv's); without "
                                                      "it, the built-in catalog is searched.")] = None,
    limit: Annotated[int, typer.Option(help="Most results (1-1000).")] = 20,
    filters: Annotated[list[str] | None, typer.Option("--filter", help="Exact FIELD=VALUE (license, provider, "
                                                                       "artifact_availability, name, tags, type).")]
    = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the entries as JSON.")] = False,
) -> None:
    """Find environments by task, from metadata only (nothing is installed or run)."""
    from ._catalog_snapshot import CatalogError, load_snapshot, search

    chosen: dict[str, str] = {}
    for item in filters or []:
        key, sep, value = item.partition("=")
        if not sep or not key or key in chosen:
            raise fail(f"--filter takes distinct FIELD=VALUE pairs, got {item!r}", code=2)
        chosen[key] = value
    if catalog is None:
        _discover_builtin(query, chosen, limit, as_json)
        return
    try:
        snapshot = load_snapshot(catalog)
        matches = search(snapshot, query, filters=chosen, limit=limit)
    except CatalogError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps({"results": [{**entry, "score": score} for entry, score in matches],
                               "snapshot": snapshot["digest"], "metadataOnly": True}, indent=2, ensure_ascii=False))
        return
    for entry, _ in matches:
        card = entry["data"]
        typer.echo(f"{entry['displayName']}: {card['description']}\n  source: {card['source']['uri']} "
                   f"{card['source']['path']} @ {card['source']['revision']}\n  license: {card['license']}\n"
                   f"  identifier: {entry['identifier']}")
    typer.echo("Metadata only: running an environment is a separate decision.")


def _discover_builtin(query: str, filters: dict[str, str], limit: int, as_json: bool) -> None:
    """``discover`` over the built-in catalog: the same word match, on names, descriptions and families."""
    import dataclasses
    import re

    from ..envs import list_envs

    unknown = set(filters) - {"family", "name"}
    if unknown:
        raise fail(f"the built-in catalog filters on family and name, not {', '.join(sorted(unknown))}", code=2)
    words = set(re.findall(r"[^\W_]+", query.casefold()))
    found = []
    for spec in list_envs():
        if any(getattr(spec, key) != value for key, value in filters.items()):
            continue
        shared = words & set(re.findall(r"[^\W_]+", f"{spec.name} {spec.description} {spec.family}".casefold()))
        if words and not shared:
            continue
        found.append((spec, round(100 * len(shared) / len(words)) if words else 0))
    found = sorted(found, key=lambda pair: (-pair[1], pair[0].name))[:limit]
    if as_json:
        typer.echo(json.dumps([{**dataclasses.asdict(s), "score": score} for s, score in found], indent=2))
        return
    for spec, _ in found:
        typer.echo(f"{spec.name} ({spec.family}): {spec.description}")
