"""The one wrapper of the Docker CLI, with a stand-in CLI (this Python) so that no engine is needed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openenv_train.containers import DockerResult, docker_available, docker_command, docker_command_async

FAKE = sys.executable  # ``docker <args>`` becomes ``python <args>``


def test_docker_command_runs_the_cli_with_the_arguments_and_raises_past_its_limit() -> None:
    done = docker_command(["-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
                          docker=FAKE, timeout_s=30)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    with pytest.raises(subprocess.TimeoutExpired):
        docker_command(["-c", "import time; time.sleep(30)"], docker=FAKE, timeout_s=0.5)


async def test_docker_command_async_feeds_stdin_caps_output_and_kills_at_its_limit() -> None:
    echo = await docker_command_async(["-c", "import sys; sys.stdout.write(sys.stdin.read() * 3)"], docker=FAKE,
                                      timeout_s=30, stdin=b"ab", cap=4)
    assert echo == DockerResult(stdout="abab", stderr="", exit_code=0, timed_out=False, truncated=True,
                                duration_s=echo.duration_s)
    slow = await docker_command_async(["-c", "import time; time.sleep(30)"], docker=FAKE, timeout_s=1.0)
    assert slow.timed_out and slow.exit_code == -9 and slow.duration_s < 20


def test_docker_available_names_a_missing_cli() -> None:
    assert docker_available("no-such-docker-cli") == "the 'no-such-docker-cli' CLI is not installed (or not on PATH)"
