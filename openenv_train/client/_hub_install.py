"""Install a cloned Hub Space's Python package into this interpreter, as OpenEnv's ``AutoEnv`` does.

OpenEnv 0.10 runs ``pip install git+https://huggingface.co/spaces/OWNER/NAME`` (``uv pip`` when ``uv`` is on
PATH) with no further flags, and skips it when the distribution is already installed. We install the same
package from the clone ``from_hub`` already made (one fetch, the revision that was read), with
``sys.executable -m pip`` so that it lands in the interpreter that imports it; ``pip_args`` adds flags
(``--no-deps``, ``--no-index``, ``--target DIR``, ...). A Space without ``pyproject.toml`` gets its
``requirements.txt`` (at the top, else in ``server/``) installed and its package imported from the clone.
Installing builds and runs the Space's code (its build backend, then its modules on import).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

from ..core import OpenEnvTrainError

__all__ = ["install_space_package"]


def _distribution(folder: Path) -> str | None:
    """The ``[project] name`` of the folder's ``pyproject.toml`` (None without one)."""
    try:
        project = tomllib.loads((folder / "pyproject.toml").read_text()).get("project", {})
    except FileNotFoundError:
        return None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise OpenEnvTrainError(f"{folder / 'pyproject.toml'} cannot be read ({exc}); the Space's package cannot "
                                "be installed") from None
    name = project.get("name")
    if not isinstance(name, str) or not name:
        raise OpenEnvTrainError(f"{folder / 'pyproject.toml'} has no [project] name; the Space's package cannot be "
                                "installed")
    return name


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _pip(args: list[str], what: str) -> None:
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OpenEnvTrainError(f"installing {what} failed: {exc}") from None
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-4:])
        raise OpenEnvTrainError(
            f"installing {what} failed ({' '.join(command)}): {tail[-600:]}; offline, install its dependencies first "
            "and pass pip_args=['--no-deps', '--no-index', '--no-build-isolation'], or install=False to skip it")


def install_space_package(folder: Path, repo_id: str, pip_args: Sequence[str] = ()) -> bool:
    """Install the package of the Space cloned at ``folder``; True when it was installed as a distribution (import
    it by name), False when only its requirements were (import it from the clone).

    Raises:
        OpenEnvTrainError: pip failed (its last lines and what to do offline), or a ``pyproject.toml`` without a
            name.
    """
    distribution = _distribution(folder)
    if distribution is not None:
        if not _installed(distribution):  # as OpenEnv: an installed distribution is used as it is
            _pip([*pip_args, str(folder)], f"{repo_id}'s package {distribution}")
        return True
    for requirements in (folder / "requirements.txt", folder / "server" / "requirements.txt"):
        if requirements.is_file():
            _pip([*pip_args, "-r", str(requirements)], f"{repo_id}'s {requirements.relative_to(folder)}")
            break
    return False
