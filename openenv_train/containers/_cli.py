"""The one wrapper of the Docker command line: is an engine there, and ``docker <args>`` run and waited for.

Every ``docker`` call of the project goes through here: :func:`docker_command` (blocking) and
:func:`docker_command_async` (an asyncio subprocess with a wall-time limit and capped output).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DockerResult", "docker_available", "docker_command", "docker_command_async"]

MiB = 2**20


@dataclass(frozen=True)
class DockerResult:
    """How one ``docker`` command ended: its output (each stream capped), exit code and wall time."""

    stdout: str
    stderr: str
    exit_code: int
    """The CLI's exit code (``-9`` when it was killed at its time limit)."""
    timed_out: bool = False
    truncated: bool = False
    """An output stream was longer than the cap and was cut."""
    duration_s: float = 0.0


def docker_command(args: Sequence[str], *, docker: str = "docker", timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run ``docker <args>`` and wait for it (output captured as text).

    Raises:
        subprocess.TimeoutExpired: it ran past ``timeout_s`` (it is killed).
        OSError: the CLI could not be started.
    """
    return subprocess.run([docker, *args], capture_output=True, text=True, timeout=timeout_s)


async def docker_command_async(args: Sequence[str], *, docker: str = "docker", timeout_s: float, cap: int = 1 * MiB,
                               stdin: bytes | None = None) -> DockerResult:
    """Run ``docker <args>`` in its own session; past ``timeout_s`` it is killed and the result says ``timed_out``.

    Args:
        args: the arguments after ``docker``.
        docker: the CLI to run.
        timeout_s: the wall-time limit.
        cap: the most bytes kept of each output stream.
        stdin: bytes to feed the command (else its stdin is empty).
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    proc = await asyncio.create_subprocess_exec(
        docker, *args, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout_s)
    except TimeoutError:
        timed_out = True
        proc.kill()
        out, err = await proc.communicate()
    return DockerResult(stdout=out[:cap].decode(errors="replace"), stderr=err[:cap].decode(errors="replace"),
                        exit_code=proc.returncode if proc.returncode is not None else -9, timed_out=timed_out,
                        truncated=len(out) > cap or len(err) > cap, duration_s=loop.time() - started)


def docker_available(docker: str = "docker", timeout_s: float = 10.0) -> str | None:
    """None when a Docker engine answers ``docker info``, else the reason it does not."""
    if shutil.which(docker) is None:
        return f"the {docker!r} CLI is not installed (or not on PATH)"
    try:
        done = docker_command(["info", "--format", "{{.ServerVersion}}"], docker=docker, timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        return f"'{docker} info' did not answer within {timeout_s:g}s"
    except OSError as exc:
        return f"'{docker} info' failed: {exc}"
    if done.returncode != 0:
        return f"no Docker engine answers: {(done.stderr or done.stdout).strip()[-300:]}"
    return None
