"""System parts some tests need (bubblewrap, Chromium, git, tmux, a Docker engine, Node.js and the pinned agent CLIs): one place
decides skip or fail.

A test that needs a part missing here is skipped with the reason and the install line, or fails where CI sets the
part's ``OPENENV_TRAIN_REQUIRE_*`` switch. Tests ask with :func:`require` or :func:`skip_or_fail`; a test that
does not ask and fails because a missing part's error reached it (e.g. a server answering "bubblewrap is not
installed") is turned into the same skip by the report hook in ``tests/conftest.py`` (:func:`skip_reason`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

import pytest


def _executables(*paths: tuple[str, str]) -> str | None:
    for variable, default in paths:
        path = os.environ.get(variable, default)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} not found"
    return None


def _sandbox() -> str | None:
    from openenv_train.sandbox import sandbox_available

    return sandbox_available()


def _browser() -> str | None:
    return _executables(("OPENENV_TRAIN_CHROMIUM", "/usr/bin/chromium"),
                        ("OPENENV_TRAIN_CHROMEDRIVER", "/usr/bin/chromedriver"))


def _debian(program: str) -> Callable[[], str | None]:
    """A probe of a program the envs run from /usr/bin inside the sandbox (git, tmux)."""
    return lambda: _executables((f"OPENENV_TRAIN_{program.upper()}", f"/usr/bin/{program}"))


def _docker() -> str | None:
    from openenv_train.containers import docker_available

    return docker_available()


def _agents() -> str | None:
    """Node.js and every pinned agent CLI in the agent cache (``openenv-train agents install all``)."""
    import shutil

    from openenv_train.harbor import AGENT_SPECS, HarborError, agent_binary

    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node or npm is not on PATH"
    for spec in AGENT_SPECS.values():
        try:
            agent_binary(spec)
        except HarborError as exc:
            return str(exc)
    return None


@dataclass(frozen=True)
class SystemPart:
    """A system package (or service) a group of tests needs."""

    name: str
    switch: str
    """The environment variable that makes a missing part a failure (CI sets it)."""
    install: str
    signs: tuple[str, ...]
    """Text that, in a failure, says this part was missing."""
    probe: Callable[[], str | None]
    """Why the part is missing here, or None."""

    @property
    def required(self) -> bool:
        return os.environ.get(self.switch) == "1"


PARTS = {part.name: part for part in (
    SystemPart("sandbox", "OPENENV_TRAIN_REQUIRE_SANDBOX", "apt-get install -y bubblewrap",
               ("bubblewrap", "SandboxUnavailable"), _sandbox),
    SystemPart("browser", "OPENENV_TRAIN_REQUIRE_BROWSER", "apt-get install -y chromium chromium-driver",
               ("chromium", "chromedriver"), _browser),
    SystemPart("git", "OPENENV_TRAIN_REQUIRE_GIT", "apt-get install -y git", ("needs git",), _debian("git")),
    SystemPart("tmux", "OPENENV_TRAIN_REQUIRE_TMUX", "apt-get install -y tmux", ("/usr/bin/tmux",), _debian("tmux")),
    SystemPart("docker", "OPENENV_TRAIN_REQUIRE_DOCKER", "bash .ci/docker-setup.sh start (installs Debian's docker.io)",
               ("docker",), _docker),
    SystemPart("agents", "OPENENV_TRAIN_REQUIRE_AGENTS",
               "apt-get install -y nodejs npm && openenv-train agents install all",
               ("AgentNotInstalled", "agents install"), _agents),
)}

INSTALL_ALL = "apt-get install -y bubblewrap chromium chromium-driver git tmux"
"""The one line that enables the sandbox and browser tests on Debian or Ubuntu."""


@functools.cache
def missing(name: str) -> str | None:
    """Why part ``name`` is missing on this machine, or None (probed once a session)."""
    return PARTS[name].probe()


def skip_or_fail(name: str, reason: str) -> None:
    """The calling test cannot run for ``reason`` about part ``name``: skip it, or fail where CI requires it."""
    part = PARTS[name]
    if part.required:
        pytest.fail(f"{part.switch}=1 but {reason}")
    pytest.skip(f"{reason} (to run this test: {part.install})")


def require(name: str) -> None:
    """Skip (or, under the part's switch, fail) the calling test where part ``name`` is missing."""
    reason = missing(name)
    if reason is not None:
        skip_or_fail(name, reason)


def skip_reason(failure: str) -> str | None:
    """The skip a failure turns into: it names a part that is missing here and not required; else None."""
    lowered = failure.lower()
    for part in PARTS.values():
        if part.required or not any(sign.lower() in lowered for sign in part.signs):
            continue
        reason = missing(part.name)
        if reason is not None:
            return f"no {part.name} here ({reason}); to run this test: {part.install}"
    return None
