"""The PyPI requirements an env folder declares (``pyproject.toml``) that this Python lacks, and installing them."""

from __future__ import annotations

import shlex
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

__all__ = ["install_line", "missing_requirements", "pip_install"]

# OpenEnv's distribution was renamed from openenv-core to openenv: either one provides the `openenv` package.
_SAME = {"openenv-core": ("openenv-core", "openenv"), "openenv": ("openenv", "openenv-core")}


def _installed(req: Requirement) -> bool:
    if req.marker is not None and not req.marker.evaluate():
        return True
    name = req.name.lower().replace("_", "-")
    for dist in _SAME.get(name, (name,)):
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
        # a renamed distribution's versions are not comparable with the old name's pins
        return dist != name or not req.specifier or req.specifier.contains(version, prereleases=True)
    return False


def missing_requirements(folder: Path) -> list[str]:
    """The ``[project] dependencies`` of ``folder/pyproject.toml`` not installed here (none without the file).

    Raises:
        ValueError: the pyproject is not valid TOML or a requirement does not parse.
    """
    pyproject = folder / "pyproject.toml"
    if not pyproject.is_file():
        return []
    try:
        deps = tomllib.loads(pyproject.read_text()).get("project", {}).get("dependencies", [])
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{pyproject} is not valid TOML: {exc}") from None
    missing = []
    for raw in deps:
        try:
            req = Requirement(raw)
        except InvalidRequirement as exc:
            raise ValueError(f"{pyproject}: dependency {raw!r} does not parse ({exc})") from None
        if not _installed(req):
            missing.append(raw)
    return missing


def install_line(requirements: list[str]) -> str:
    """The exact command that installs ``requirements`` into this Python."""
    return shlex.join([sys.executable, "-m", "pip", "install", *requirements])


def pip_install(requirements: list[str]) -> None:
    """Install ``requirements`` into this Python with pip.

    Raises:
        ValueError: pip failed; the message has its last lines.
    """
    done = subprocess.run([sys.executable, "-m", "pip", "install", *requirements], capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise ValueError(f"'{install_line(requirements)}' failed:\n{tail}")
