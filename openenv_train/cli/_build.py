"""``openenv-train build ENV``: write a Docker build context for an env and build it when an engine answers."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from ..core import EnvLoadError
from ._app import app, err, fail


@app.command()
def build(
    env: Annotated[str, typer.Argument(help="Catalog name or package.module:ClassName (run from the directory holding it).")],
    tag: Annotated[str | None, typer.Option("-t", "--tag", help="Image tag (default openenv-train/ENV:latest).")] = None,
    base_image: Annotated[str | None, typer.Option(help="Base image with Python 3.11 (default python:3.11-slim).")] = None,
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write the build context here (kept).")] = None,
    deps: Annotated[str | None, typer.Option(
        help="index (pip from PyPI in the build), wheels (downloaded here, offline build) or host (this Python's "
             "packages; base Python must be 3.11). Default: index, or wheels with --base-image.")] = None,
    no_build: Annotated[bool, typer.Option("--no-build", help="Only write the context.")] = False,
    docker: Annotated[str, typer.Option(help="Docker CLI to use.")] = "docker",
) -> None:
    """Build a Docker image that serves ENV (port 8000 by default; '--uds /sock/env.sock' for socket mode)."""
    from .. import envs  # noqa: F401 - loading the catalog lends its lookup to write_context (containers)
    from ..containers import DEFAULT_BASE_IMAGE, build_image, default_tag, docker_available, write_context

    tag = tag or default_tag(env)
    mode = deps or ("wheels" if base_image else "index")
    out = Path(output) if output else Path(tempfile.mkdtemp(prefix="openenv-train-build-")) / "context"
    try:
        context = write_context(env, out, base_image=base_image or DEFAULT_BASE_IMAGE, deps=mode)
    except EnvLoadError as exc:
        raise fail(str(exc), code=2) from None
    except (ValueError, RuntimeError, FileNotFoundError) as exc:
        raise fail(str(exc)) from None
    err.print(f"build context for {env}: {context.path}")
    reason = None if not no_build else "--no-build"
    if reason is None:
        reason = docker_available(docker)
    if reason is not None:
        err.print(f"not building ({reason}); build it with: docker build -t {tag} {context.path}")
        return
    try:
        build_image(context, tag, docker=docker)
    except RuntimeError as exc:
        raise fail(f"{exc}\nthe build context is kept at {context.path}") from None
    if output is None:
        shutil.rmtree(context.path.parent, ignore_errors=True)
    typer.echo(tag)
