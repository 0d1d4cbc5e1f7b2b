"""``EnvClient.from_docker_image`` against a real engine (moved from tests/client/test_providers.py, where it
skipped whenever the engine was down or no image was named): an episode, the container removed on exit, and a
missing image named in the error."""

from __future__ import annotations

import subprocess

import pytest

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerStartError
from openenv_train.launch import DockerProvider
from openenv_train.launch._docker import LABEL

pytestmark = pytest.mark.timeout(900)  # the first test may install Docker and build the base image


def _labelled() -> set[str]:
    done = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}"], capture_output=True, text=True,
                          check=True)
    return set(done.stdout.split())


async def test_from_docker_image_runs_an_episode_and_removes_its_container(echo_image: str) -> None:
    before = _labelled()
    async with await GenericEnvClient.from_docker_image(echo_image) as env:
        assert (await env.reset()).done is False
        result = await env.step({"type": "call_tool", "tool_name": "echo_message", "arguments": {"message": "hi"}})
        assert result.observation["result"]["data"] == "hi"
        assert len(_labelled() - before) == 1
    assert _labelled() <= before


async def test_a_missing_image_is_named(docker_engine: str) -> None:
    with pytest.raises(ServerStartError, match="openenv-train/no-such-image:never"):
        await DockerProvider("openenv-train/no-such-image:never").start()
