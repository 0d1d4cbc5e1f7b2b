"""``openenv-train init NAME``: scaffold an environment package in OpenEnv's layout, served by openenv-train."""

from __future__ import annotations

import keyword
import shutil
import subprocess
from pathlib import Path
from typing import Annotated

import typer

from ._app import app, err, fail

__all__ = ["TEMPLATES", "render_tree", "replacements"]

TEMPLATES = Path(__file__).parent / "templates"
_SUFFIX = ".tmpl"  # template modules are not .py files so that pytest, ruff and mypy leave them alone


def replacements(name: str) -> dict[str, str]:
    """The placeholders of the templates (OpenEnv's names) for env ``name``.

    Example:
        >>> replacements("my_env")["__ENV_CLASS_NAME__"], replacements("my_env")["__ENV_TITLE_NAME__"]
        ('MyEnv', 'My Env')
    """
    return {
        "__ENV_CLASS_NAME__": "".join(part.capitalize() for part in name.split("_")),
        "__ENV_TITLE_NAME__": " ".join(part.capitalize() for part in name.split("_")),
        "__ENV_NAME__": name,
    }


def _render(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():  # longest keys first: __ENV_CLASS_NAME__ before __ENV_NAME__
        text = text.replace(key, value)
    return text


def render_tree(source: Path, dest: Path, values: dict[str, str]) -> list[Path]:
    """Copy the template folder ``source`` to ``dest``, filling placeholders in names and text."""
    written = []
    for path in sorted(source.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts:
            continue
        relative = _render(str(path.relative_to(source)), values).removesuffix(_SUFFIX)
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_render(path.read_text(encoding="utf-8"), values), encoding="utf-8")
        written.append(target)
    return written


def check_name(name: str) -> str | None:
    """Why ``name`` cannot be an env package name, or None when it can."""
    if not name.isidentifier() or keyword.iskeyword(name):
        return f"{name!r} is not a Python identifier; use snake_case such as 'my_env'"
    if name != name.lower():
        return f"{name!r} has capitals; use snake_case such as {name.lower()!r}"
    if name in ("server", "models", "client", "tests", "openenv_train", "openenv"):
        return f"{name!r} would shadow a module the environment imports; pick another name"
    return None


def _uv_lock(folder: Path) -> None:
    """Write uv.lock like ``openenv init`` does, when uv is installed (OpenEnv's validate looks for it)."""
    if shutil.which("uv") is None:
        err.print("uv is not installed, so no uv.lock was written ('openenv validate' asks for one: run 'uv lock')")
        return
    try:
        subprocess.run(["uv", "lock", "--directory", str(folder)], check=True, capture_output=True, timeout=120)
    except (subprocess.SubprocessError, OSError) as exc:
        err.print(f"could not write uv.lock ({type(exc).__name__}); run 'uv lock' in {folder}")


@app.command()
def init(
    name: Annotated[str, typer.Argument(help="Environment name in snake_case; also its package and folder name.")],
    output_dir: Annotated[Path, typer.Option("--output-dir", "-o", help="Folder to create NAME/ in.")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Replace an existing NAME/ folder.")] = False,
) -> None:
    """Create NAME/: models, environment, client, server app, openenv.yaml, pyproject, Dockerfile, README, tests.

    It has OpenEnv's 'openenv init' layout and manifest and openenv-train's Environment base class.

    As generated, it installs with pip and passes 'openenv-train validate' and its own tests.
    """
    problem = check_name(name)
    if problem:
        raise fail(problem, code=2)
    folder = output_dir / name
    if folder.exists():
        if not force:
            raise fail(f"{folder} already exists; pick another name or -o folder, or pass --force to replace it", code=2)
        shutil.rmtree(folder)
    written = render_tree(TEMPLATES / "env", folder, replacements(name))
    _uv_lock(folder)
    typer.echo(f"created {folder} ({len(written)} files)")
    typer.echo(f"next: pip install -e {folder} && python -m pytest {folder}/tests && openenv-train validate {folder}")
    typer.echo(f"serve: openenv-train serve {name}.server.app:app --reload")
