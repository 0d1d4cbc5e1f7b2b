"""The runtime requirements of the project and of an env, and copying installed ones from this Python."""

from __future__ import annotations

import importlib.metadata as md
import re
import shutil
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

__all__ = ["copy_installed", "project_root", "requirements"]

_PROJECT = "openenv-train"


def project_root() -> Path:
    """The directory that holds the ``openenv_train`` package."""
    return Path(__file__).resolve().parents[2]


def _project_requirements() -> list[str]:
    pyproject = project_root() / "pyproject.toml"
    if pyproject.is_file():  # a source checkout: its pyproject is newer than any installed metadata
        with pyproject.open("rb") as file:
            data = tomllib.load(file)
        if data.get("project", {}).get("name") == _PROJECT:
            return list(data["project"].get("dependencies", []))
    return [r for r in md.requires(_PROJECT) or [] if "extra ==" not in r]


def requirements(extra: tuple[str, ...] = ()) -> list[str]:
    """The project's runtime requirements plus ``extra`` (an env's own), markers kept.

    Example:
        >>> any(r.startswith("pydantic") for r in requirements())
        True
    """
    return [*_project_requirements(), *extra]


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(reqs: list[str]) -> list[md.Distribution]:
    seen: dict[str, md.Distribution] = {}
    todo = [Requirement(r) for r in reqs]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if _key(req.name) in seen or _key(req.name) == _PROJECT:
            continue
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            raise FileNotFoundError(f"{req.name} is required but not installed in this Python") from None
        seen[_key(req.name)] = dist
        todo += [Requirement(r) for r in dist.requires or []]
        for extra in req.extras:
            todo += [Requirement(r) for r in dist.requires or []
                     if Requirement(r).marker is not None and Requirement(r).marker.evaluate({"extra": extra})]  # type: ignore[union-attr]
    return list(seen.values())


def copy_installed(reqs: list[str], dest: Path) -> int:
    """Copy the installed distributions ``reqs`` need (their site-packages files) into ``dest``; returns the count."""
    dists = _closure(reqs)
    for dist in dists:
        for file in dist.files or []:
            if str(file).startswith(".."):  # scripts and data outside site-packages
                continue
            source = Path(str(dist.locate_file(file)))
            if source.is_file():
                target = dest / str(file)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)  # keeps mtimes, so the copied .pyc files stay valid
    return len(dists)
