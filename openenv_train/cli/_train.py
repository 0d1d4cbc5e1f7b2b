"""``openenv-train train RECIPE``: run a recipe of ``openenv_train.recipes`` with a config file and overrides."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Annotated

import typer

from ._app import app, fail

__all__ = ["list_recipes"]


def list_recipes() -> list[str]:
    """The runnable recipe modules (each has ``main(argv) -> int``), sorted.

    Example:
        >>> "collect" in list_recipes()
        True
    """
    from .. import recipes

    # subpackages (recipes.wordle) are the recipes' libraries, not recipes
    return sorted(m.name for m in pkgutil.iter_modules(recipes.__path__) if not m.name.startswith("_") and not m.ispkg)


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def train(
    recipe: Annotated[str | None, typer.Argument(help="Recipe module name, e.g. grpo_wordle (see --list).")] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="YAML file of the recipe's options "
                                                                         "(e.g. configs/RECIPE.yaml).")] = None,
    overrides: Annotated[list[str] | None, typer.Option(
        "--set", "-s", help="key=value option, repeatable; nested keys are dotted (grpo.max_steps=2).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the recipes and exit.")] = False,
) -> None:
    """Run openenv_train.recipes.RECIPE.main(['--config', FILE, *overrides]); its exit status is this command's."""
    names = list_recipes()
    if list_:
        for name in names:
            module = importlib.import_module(f"openenv_train.recipes.{name}")
            summary = (module.__doc__ or "").strip().split("\n", 1)[0]
            typer.echo(f"{name:24} {summary}")
        return
    if recipe is None:
        raise fail(f"name a recipe: {', '.join(names)} (openenv-train train --list)", code=2)
    if recipe not in names:
        from ..core import did_you_mean

        raise fail(f"no recipe {recipe!r}{did_you_mean(recipe, names, otherwise='.')} Available: {', '.join(names)}", code=2)
    if config is not None and not config.is_file():
        raise fail(f"--config {config}: no such file", code=2)
    bad = [item for item in overrides or [] if "=" not in item or item.startswith("=")]
    if bad:
        raise fail(f"--set takes key=value, got {', '.join(map(repr, bad))}", code=2)
    module = importlib.import_module(f"openenv_train.recipes.{recipe}")
    argv = (["--config", str(config)] if config is not None else []) + list(overrides or [])
    try:
        code = module.main(argv)
    except SystemExit as exc:  # argparse's usage errors exit 2
        code = exc.code if isinstance(exc.code, int) else 1
    raise typer.Exit(int(code or 0))
