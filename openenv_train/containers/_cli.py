"""The one wrapper of the Docker command line: is an engine there, and where is the CLI."""

from __future__ import annotations

import shutil
import subprocess

__all__ = ["docker_available"]


def docker_available(docker: str = "docker", timeout_s: float = 10.0) -> str | None:
    """None when a Docker engine answers ``docker info``, else the reason it does not."""
    if shutil.which(docker) is None:
        return f"the {docker!r} CLI is not installed (or not on PATH)"
    try:
        done = subprocess.run([docker, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"'{docker} info' did not answer within {timeout_s:g}s"
    except OSError as exc:
        return f"'{docker} info' failed: {exc}"
    if done.returncode != 0:
        return f"no Docker engine answers: {(done.stderr or done.stdout).strip()[-300:]}"
    return None
