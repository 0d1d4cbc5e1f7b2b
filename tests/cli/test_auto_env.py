"""``AutoEnv.from_hub`` / ``AutoAction.from_hub`` against a local Git repository standing in for the Space."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
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


#: Offline: the Space's one dependency (openenv-train) is installed; setuptools builds it from this venv.
OFFLINE = ["--no-deps", "--no-index", "--no-build-isolation", "--quiet"]


async def test_from_hub_pip_installs_the_space_and_connects(space_repo: Path, scaffold: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"  # pip --target: the test never changes the shared venv
    monkeypatch.syspath_prepend(str(site))
    action_cls = AutoAction.from_hub("tester/demo_env", git_url=str(space_repo), trust_remote_code=True,
                                     pip_args=[*OFFLINE, "--target", str(site)])
    assert action_cls.__name__ == "DemoEnvAction"
    assert Path(sys.modules["demo_env"].__file__ or "").is_relative_to(site)  # imported from the installed package
    assert importlib.metadata.distribution("openenv-demo_env").version == "0.1.0"
    async with serve_process(str(scaffold)) as (endpoint, _):
        # installed already: as OpenEnv's AutoEnv, no second install (no pip_args needed)
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
    assert not (tmp_path / "cache").exists()  # nothing was cloned, nothing installed
    monkeypatch.setenv("OPENENV_TRUST_REMOTE_CODE", "1")
    assert AutoAction.from_hub("tester/demo_env", git_url=str(space_repo), install=False).__name__ == "DemoEnvAction"


def test_a_failed_install_says_what_to_do_offline(space_repo: Path, tmp_path: Path) -> None:
    with pytest.raises(OpenEnvTrainError, match=r"installing tester/demo_env's package openenv-demo_env failed.*"
                       r"--no-deps"):  # --no-index without --no-deps: pip cannot find openenv-train's wheel
        AutoAction.from_hub("tester/demo_env", git_url=str(space_repo), trust_remote_code=True,
                            pip_args=["--no-index", "--no-build-isolation", "--target", str(tmp_path / "site")])


def test_a_missing_space_or_a_bad_id_is_named(space_repo: Path, tmp_path: Path) -> None:
    with pytest.raises(OpenEnvTrainError, match="the Space tester/nope was not found or cannot be cloned"):
        AutoAction.from_hub("tester/nope", git_url=str(tmp_path / "no-such-repo"), trust_remote_code=True)
    with pytest.raises(OpenEnvTrainError, match="a Space id is OWNER/NAME, got 'demo_env'"):
        AutoAction.from_hub("demo_env", trust_remote_code=True)


def test_a_space_without_pyproject_gets_its_requirements_installed(space_repo: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-C", str(space_repo)]
    (space_repo / "pyproject.toml").unlink()
    (space_repo / "server" / "requirements.txt").write_text("pyyaml>=6\n")  # installed already: pip has nothing to fetch
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "requirements only"], check=True)
    action_cls = AutoAction.from_hub("tester/demo_env", git_url=str(space_repo), trust_remote_code=True,
                                     pip_args=["--no-index", "--quiet"])
    assert action_cls.__name__ == "DemoEnvAction" and "cache" in (sys.modules["demo_env"].__file__ or "")
