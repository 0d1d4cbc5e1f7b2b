"""``AutoEnv.from_hub`` / ``AutoAction.from_hub`` against a local Git repository standing in for the Space."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from openenv_train.client import AutoAction, AutoEnv, RemoteCodeRefused
from openenv_train.core import OpenEnvTrainError
from tests.conftest import serve_process


@pytest.fixture
def space_repo(scaffold: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "space"
    shutil.copytree(scaffold, repo)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "space"], check=True)
    monkeypatch.setenv("OPENENV_TRAIN_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENENV_TRUST_REMOTE_CODE", raising=False)
    return repo


async def test_from_hub_clones_imports_and_connects(space_repo: Path, scaffold: Path) -> None:
    action_cls = AutoAction.from_hub("tester/demo_env", git_url=str(space_repo), trust_remote_code=True)
    assert action_cls.__name__ == "DemoEnvAction"
    async with serve_process(str(scaffold)) as (endpoint, _):
        env = await AutoEnv.from_hub("tester/demo_env", git_url=str(space_repo), base_url=endpoint.base_url,
                                     trust_remote_code=True)
        try:
            assert type(env).__name__ == "DemoEnvEnv"
            await env.reset()
            result = await env.step(action_cls(message="hello"))
            assert result.observation.echoed_message == "hello"
        finally:
            await env.close()


def test_remote_code_needs_consent(space_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(RemoteCodeRefused, match="trust_remote_code=True or set OPENENV_TRUST_REMOTE_CODE=1"):
        AutoAction.from_hub("tester/demo_env", git_url=str(space_repo))
    assert not (tmp_path / "cache").exists()  # nothing was cloned
    monkeypatch.setenv("OPENENV_TRUST_REMOTE_CODE", "1")
    assert AutoAction.from_hub("tester/demo_env", git_url=str(space_repo)).__name__ == "DemoEnvAction"


def test_a_missing_space_or_a_bad_id_is_named(space_repo: Path, tmp_path: Path) -> None:
    with pytest.raises(OpenEnvTrainError, match="the Space tester/nope was not found or cannot be cloned"):
        AutoAction.from_hub("tester/nope", git_url=str(tmp_path / "no-such-repo"), trust_remote_code=True)
    with pytest.raises(OpenEnvTrainError, match="a Space id is OWNER/NAME, got 'demo_env'"):
        AutoAction.from_hub("demo_env", trust_remote_code=True)
