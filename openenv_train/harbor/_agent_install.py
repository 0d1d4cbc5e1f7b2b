"""The agent cache: ``openenv-train agents install NAME`` puts an agent's pinned package in
``<cache>/<name>/<version>/`` (npm: ``node_modules/``; pip: ``venv/``), and runs find it there.

The cache is ``$OPENENV_TRAIN_AGENTS_DIR``, else ``$XDG_CACHE_HOME/openenv-train/agents``, else
``~/.cache/openenv-train/agents``. A folder counts as installed once its marker file (``installed.json``) is
written, which is the install's last step: an interrupted install is redone from scratch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ._agent_specs import AGENT_SPECS, AgentSpec
from ._task_errors import AgentInstallError, AgentNotInstalled

__all__ = ["AGENTS_DIR_ENV", "agent_binary", "agent_spec", "agents_dir", "install_agent", "installed_dir"]

AGENTS_DIR_ENV = "OPENENV_TRAIN_AGENTS_DIR"
"""The variable that names the agent cache folder."""
_MARKER = "installed.json"


def agents_dir() -> Path:
    """The agent cache folder (see the module docstring); not created here."""
    if os.environ.get(AGENTS_DIR_ENV):
        return Path(os.environ[AGENTS_DIR_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "openenv-train" / "agents"


def agent_spec(name: str) -> AgentSpec:
    """The spec of installed agent ``name``.

    Raises:
        KeyError: no such agent (the message lists them).
    """
    try:
        return AGENT_SPECS[name]
    except KeyError:
        raise KeyError(f"no installed agent {name!r}; the agents are: {', '.join(AGENT_SPECS)}") from None


def installed_dir(spec: AgentSpec, root: Path | None = None) -> Path:
    """Where ``spec``'s pinned version lives in the cache (installed or not)."""
    return (root or agents_dir()) / spec.name / spec.version


def agent_binary(spec: AgentSpec, root: Path | None = None) -> Path:
    """The installed CLI of ``spec``, checked.

    Raises:
        AgentNotInstalled: the pinned version is not in the cache, or it needs Node.js and ``node`` is not on PATH;
            the message says what to run.
    """
    folder = installed_dir(spec, root)
    binary = folder / spec.binary
    if not (folder / _MARKER).is_file() or not binary.exists():
        raise AgentNotInstalled(f"agent {spec.name} {spec.version} is not installed in {folder.parent}; run: "
                                f"openenv-train agents install {spec.name}")
    if spec.needs_node and shutil.which("node") is None:
        raise AgentNotInstalled(f"agent {spec.name} runs on Node.js and `node` is not on PATH; install Node.js 20 or "
                                "newer (e.g. apt-get install -y nodejs npm)")
    return binary


def install_agent(name: str, root: Path | None = None, *, force: bool = False, timeout_s: float = 900.0) -> Path:
    """Install agent ``name``'s pinned package into the cache (a no-op when it is there); returns its folder.

    Raises:
        KeyError: no such agent.
        AgentInstallError: npm or pip is missing or failed (their output is in the message).
    """
    spec = agent_spec(name)
    folder = installed_dir(spec, root)
    if (folder / _MARKER).is_file() and not force:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if spec.installer == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise AgentInstallError(f"installing {spec.name} needs npm, which is not on PATH; install Node.js 20 or "
                                    "newer with npm (e.g. apt-get install -y nodejs npm)")
        steps = [[npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error",
                  "--save-exact", spec.pinned]]
    else:
        # pip installs into a venv of its own, built on this interpreter (the one the sandbox mounts)
        venv = folder / "venv"
        steps = [[sys.executable, "-m", "venv", "--without-pip", str(venv)],
                 [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                  "--disable-pip-version-check", spec.pinned]]
    for argv in steps:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise AgentInstallError(f"installing {spec.pinned}: {' '.join(argv[:3])} failed: {exc}") from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout)[-2000:]
            raise AgentInstallError(f"installing {spec.pinned} failed (exit code {done.returncode}): {tail}")
    if not (folder / spec.binary).exists():
        raise AgentInstallError(f"installing {spec.pinned} gave no {spec.binary} in {folder}")
    (folder / _MARKER).write_text(json.dumps({"name": spec.name, "package": spec.package, "version": spec.version}))
    return folder
