"""``openenv-train export verifiers ENV DIR``: an env of ours as another framework's installable environment."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._app import app, fail

export_app = typer.Typer(help="Package an env for another framework (verifiers).", no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("verifiers")
def export_verifiers(
    env: Annotated[str, typer.Argument(help="Catalog name, module:Class, env folder or server URL.")],
    directory: Annotated[Path, typer.Argument(help="Folder to write pyproject.toml and the module into.")],
    name: Annotated[str | None, typer.Option(help="Distribution name (default: openenv-<env>).")] = None,
) -> None:
    """Write a verifiers (v1) environment package around ENV: `pip install DIR`, then `vf-eval NAME`.

    Exit status 0 on success, 1 for an unknown env or a bad name.
    """
    from ..core import OpenEnvTrainError
    from ..integrations.verifiers import export_package, package_name

    try:
        module = export_package(env, directory, name=name)
    except OpenEnvTrainError as exc:
        raise fail(str(exc)) from None
    dist = name or package_name(env)
    typer.echo(f"wrote {directory / 'pyproject.toml'} and {module}")
    typer.echo(f"next: pip install {directory} && vf-eval {dist} --no-push -m default --client.base-url "
               "http://127.0.0.1:8001/v1 --env.player.runtime.type subprocess --env.player.harness.id null")
