"""``openenv-train export verifiers``: an env of ours as an installable verifiers environment package."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from ._errors import VerifiersError

__all__ = ["export_package", "package_name"]


def package_name(env: str) -> str:
    """The distribution name of an exported env: ``openenv-<env>`` (its module: ``openenv_<env>``).

    >>> package_name("wordle"), package_name("pkg.mod:MyEnv")
    ('openenv-wordle', 'openenv-myenv')
    """
    base = env.rsplit(":", 1)[-1].rstrip("/").rsplit("/", 1)[-1]
    return "openenv-" + re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")


_MODULE = '''\
"""verifiers environment: openenv_train's {env!r} env (made by `openenv-train export verifiers`)."""

from openenv_train.integrations.verifiers import verifiers_classes

_classes = verifiers_classes({env!r})
{prefix}Config = _classes["Config"]
{prefix}Taskset = _classes["Taskset"]
{prefix}EnvConfig = _classes["EnvConfig"]
{prefix}Env = _classes["Env"]

__all__ = ["{prefix}Config", "{prefix}Env", "{prefix}EnvConfig", "{prefix}Taskset"]
'''

_PYPROJECT = '''\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "openenv_train's {env} env as a verifiers taskset"
requires-python = ">=3.11"
dependencies = ["verifiers==0.4.0", "openenv-train"]

[tool.setuptools]
py-modules = ["{module}"]
'''


def export_package(env: str, directory: str | Path, *, name: str | None = None) -> Path:
    """Write an installable verifiers environment package around ``env``: ``pyproject.toml`` and one module.

    Args:
        env: catalog name, ``module:Class``, env folder or server URL.
        directory: where to write (created; existing files of the same names are replaced).
        name: the distribution name (default :func:`package_name`); its module is the name with ``_``.

    Returns:
        The module file written.

    Raises:
        EnvLoadError: ``env`` is not a known env (close matches named).
        VerifiersError: ``name`` is not a valid distribution name.
    """
    from ...pool import is_url

    if not is_url(env):
        from ...envs import load_env_target

        load_env_target(env)
    name = name or package_name(env)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", name):
        raise VerifiersError(f"package name {name!r} must be letters, digits, '-' or '_', starting with a letter")
    module = name.replace("-", "_").lower()
    prefix = "".join(part.capitalize() for part in module.split("_"))
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pyproject.toml").write_text(_PYPROJECT.format(name=name, env=env, module=module), encoding="utf-8")
    path = out / f"{module}.py"
    path.write_text(textwrap.dedent(_MODULE.format(env=env, prefix=prefix)), encoding="utf-8")
    return path
