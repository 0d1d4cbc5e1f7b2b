"""A real Docker engine for these tests: one that answers, or one ``.ci/docker-setup.sh`` installs and starts.

The setup script (which installs Debian's docker.io as root) runs only when ``OPENENV_TRAIN_DOCKER_SETUP=1``
or ``OPENENV_TRAIN_REQUIRE_DOCKER=1`` (CI sets the latter, which also makes the tests fail instead of skip);
otherwise, without an engine and base image, the tests skip with the reason. Images are built once per session
on the cached local base image ``openenv-train/base:py3`` (override with ``OPENENV_TRAIN_DOCKER_BASE``).
"""

from __future__ import annotations

import os
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_train.containers import build_image, docker_available, write_context
from tests import _system_parts

REQUIRED = os.environ.get("OPENENV_TRAIN_REQUIRE_DOCKER") == "1"
BASE = os.environ.get("OPENENV_TRAIN_DOCKER_BASE", "openenv-train/base:py3")
SETUP = Path(__file__).resolve().parents[2] / ".ci" / "docker-setup.sh"


def _unavailable(reason: str) -> None:
    _system_parts.skip_or_fail("docker", reason)


def _setup() -> str | None:
    """Run the setup script (as root, with apt) and return why Docker is still missing, or None."""
    if os.geteuid() != 0 or not Path("/usr/bin/apt-get").exists():
        return "not root or no apt-get to install docker.io"
    done = subprocess.run(["bash", str(SETUP), "start"], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "OPENENV_TRAIN_DOCKER_BASE": BASE})
    if done.returncode != 0:
        return f".ci/docker-setup.sh failed: {(done.stdout + done.stderr).strip()[-1500:]}"
    return None


@pytest.fixture(scope="package")
def docker_engine() -> Iterator[str]:
    """The base image's tag, once an engine answers and the base image exists."""
    was_running = docker_available() is None
    present = was_running and subprocess.run(["docker", "image", "inspect", BASE], capture_output=True).returncode == 0
    if not present:
        if os.environ.get("OPENENV_TRAIN_DOCKER_SETUP", "1" if REQUIRED else "0") != "1":
            _unavailable(f"no engine with {BASE} ({docker_available()}); run '.ci/docker-setup.sh start' or set "
                         "OPENENV_TRAIN_DOCKER_SETUP=1 to let the tests install and start one")
        reason = _setup()
        if reason is not None:
            _unavailable(f"no Docker engine: {reason}")
    yield BASE
    # Rebuilt test images leave their predecessors dangling: drop those (layers of live images stay).
    subprocess.run(["docker", "image", "prune", "-f", "--filter", "label=org.openenv-train.env"], capture_output=True)
    if not was_running:  # leave the machine as found: other tests decide by whether an engine answers
        subprocess.run(["bash", str(SETUP), "stop"], capture_output=True, timeout=120)


def _build(env: str, tag: str, out: Path, base: str) -> str:
    context = write_context(env, out, base_image=base, deps="host")
    try:
        return build_image(context, tag)
    except RuntimeError as exc:  # seen once on a freshly restarted engine: retry, but say so
        warnings.warn(f"first docker build of {tag} failed, retrying: {exc}", stacklevel=1)
        return build_image(context, tag)


@pytest.fixture(scope="package")
def echo_image(docker_engine: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return _build("echo", "openenv-train/echo:test", tmp_path_factory.mktemp("echo") / "ctx", docker_engine)


@pytest.fixture(scope="package")
def wordle_image(docker_engine: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return _build("wordle", "openenv-train/wordle:test", tmp_path_factory.mktemp("wordle") / "ctx", docker_engine)
