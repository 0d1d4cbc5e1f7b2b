"""``AutoEnv.from_hub`` / ``AutoAction.from_hub``: the client and action classes of an env published as a Hub Space
(an env folder with ``openenv.yaml``, ``client.py`` and ``models.py``), as OpenEnv's ``AutoEnv``/``AutoAction``.

This runs code from the Space: its repository is cloned (``git clone --depth 1``) into
``~/.cache/openenv-train/hub/OWNER/NAME`` (``$OPENENV_TRAIN_HUB_CACHE`` moves it), its package is pip-installed
into this interpreter as OpenEnv's ``AutoEnv`` installs it (``_hub_install``: its ``pyproject.toml`` with its
dependencies, or its ``requirements.txt``; the build backend runs the Space's build code), and imported
(``client.py``, ``models.py`` and whatever they import), in this process. So it is refused unless the caller
allows it: ``trust_remote_code=True``, or ``OPENENV_TRUST_REMOTE_CODE=1`` (OpenEnv's variable) in the environment.
``install=False`` imports from the clone without installing (the package's dependencies must be installed).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from ..core import Action, OpenEnvTrainError
from ..launch import space_url
from ._client import EnvClient
from ._hub_install import install_space_package

__all__ = ["TRUST_REMOTE_CODE_ENV", "AutoAction", "AutoEnv", "RemoteCodeRefused", "hub_package", "import_folder_package"]

#: Set to 1 (true, yes) to allow ``from_hub`` to run a Space's code without ``trust_remote_code=True``.
TRUST_REMOTE_CODE_ENV = "OPENENV_TRUST_REMOTE_CODE"


class RemoteCodeRefused(OpenEnvTrainError):
    """``from_hub`` would run a Space's code and the caller has not allowed it."""


def _trusted(trust_remote_code: bool) -> bool:
    return trust_remote_code or os.environ.get(TRUST_REMOTE_CODE_ENV, "").lower() in ("1", "true", "yes")


def _cache_dir(repo_id: str) -> Path:
    root = Path(os.environ.get("OPENENV_TRAIN_HUB_CACHE", "~/.cache/openenv-train/hub")).expanduser()
    return root / repo_id


def hub_package(repo_id: str, *, trust_remote_code: bool = False, git_url: str | None = None,
                revision: str | None = None, install: bool = True, pip_args: Sequence[str] = ()) -> Any:
    """Clone the Space ``repo_id`` (or ``git_url``: any Git URL or local repository standing in for it), install its
    package (``install``; ``pip_args`` are extra flags of ``pip install``) and import it; returns the package module.

    Raises:
        RemoteCodeRefused: neither ``trust_remote_code`` nor ``$OPENENV_TRUST_REMOTE_CODE`` allows it.
        OpenEnvTrainError: a bad id, a Space that cannot be cloned, or a folder that is not an env package.
    """
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise OpenEnvTrainError(f"a Space id is OWNER/NAME, got {repo_id!r}")
    url = git_url or f"https://huggingface.co/spaces/{repo_id}"
    if not _trusted(trust_remote_code):
        raise RemoteCodeRefused(
            f"loading {repo_id} clones {url}, pip-installs its package and imports its Python code in this process; "
            "read it first, then pass "
            f"trust_remote_code=True or set {TRUST_REMOTE_CODE_ENV}=1 to allow it")
    dest = _cache_dir(repo_id)
    shutil.rmtree(dest, ignore_errors=True)  # a fresh clone: never code left from another revision
    dest.parent.mkdir(parents=True, exist_ok=True)
    command = ["git", "clone", "-q", "--depth", "1", *(["--branch", revision] if revision else []), url, str(dest)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OpenEnvTrainError(f"cannot clone {url}: {exc}") from None
    if done.returncode != 0:
        raise OpenEnvTrainError(f"the Space {repo_id} was not found or cannot be cloned from {url} "
                                f"(git: {done.stderr.strip()[-200:]}); check OWNER/NAME and your access to it")
    try:
        manifest = yaml.safe_load((dest / "openenv.yaml").read_text())
        name = manifest["name"]
    except (OSError, yaml.YAMLError, TypeError, KeyError):
        raise OpenEnvTrainError(f"{repo_id} is not an env folder: it needs an openenv.yaml with a 'name'") from None
    if not (dest / "__init__.py").is_file():
        raise OpenEnvTrainError(f"{repo_id} has no __init__.py: it is not an env package")
    if install and install_space_package(dest, repo_id, pip_args):
        importlib.invalidate_caches()
        for key in [k for k in sys.modules if k == name or k.startswith(f"{name}.")]:
            del sys.modules[key]  # a copy imported earlier (from a clone) must not answer for the installed one
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            # its distribution does not install a package of that name (another layout): use the clone
    return import_folder_package(dest, name)


def import_folder_package(folder: Path, name: str) -> ModuleType:
    """Import ``folder`` as package ``name`` (whatever the folder is called), replacing any copy already imported.

    Raises:
        ImportError: the folder has no ``__init__.py``; or whatever its code raises.
    """
    for key in [k for k in sys.modules if k == name or k.startswith(f"{name}.")]:
        del sys.modules[key]  # another copy of the package must not answer for this one
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py", submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {folder / '__init__.py'}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _subclass_in(module_name: str, base: type) -> type:
    module = importlib.import_module(module_name)
    found = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, base) and v is not base
             and v.__module__ == module.__name__]
    if not found:
        raise OpenEnvTrainError(f"{module_name} defines no {base.__name__} subclass")
    return found[0]


class AutoEnv:
    """Connect to a Hub env through the client class its Space ships (see the module's note on remote code)."""

    @staticmethod
    def get_env_class(repo_id: str, **hub: Any) -> type[EnvClient[Any, Any, Any]]:
        """The Space's client class (``client.py``'s EnvClient subclass)."""
        package = hub_package(repo_id, **hub)
        return _subclass_in(f"{package.__name__}.client", EnvClient)

    @staticmethod
    async def from_hub(repo_id: str, *, base_url: str | None = None, trust_remote_code: bool = False,
                       git_url: str | None = None, revision: str | None = None, install: bool = True,
                       pip_args: Sequence[str] = (), **client: Any) -> Any:
        """A connected client of the Space's env (``base_url``: a server to use instead of the Space's own URL;
        ``install``/``pip_args``: as :func:`hub_package`).

        Raises:
            RemoteCodeRefused: remote code is not allowed (see the module's note).
        """
        cls = AutoEnv.get_env_class(repo_id, trust_remote_code=trust_remote_code, git_url=git_url, revision=revision,
                                    install=install, pip_args=pip_args)
        return await cls(base_url or space_url(repo_id), **client).connect()


class AutoAction:
    """The action class a Hub env's Space ships (``models.py``'s Action subclass)."""

    @staticmethod
    def from_hub(repo_id: str, *, trust_remote_code: bool = False, git_url: str | None = None,
                 revision: str | None = None, install: bool = True, pip_args: Sequence[str] = ()) -> type[Action]:
        """The Space's action class (see the module's note on remote code; ``install``/``pip_args``: as
        :func:`hub_package`)."""
        package = hub_package(repo_id, trust_remote_code=trust_remote_code, git_url=git_url, revision=revision,
                              install=install, pip_args=pip_args)
        return _subclass_in(f"{package.__name__}.models", Action)
