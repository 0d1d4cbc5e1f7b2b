"""``openenv-train push``: the staged Space, the missing-token error, and the upload against a fake Hub client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from openenv_train.cli import _push as push_module
from openenv_train.cli import main

from .conftest import cli

NO_HUB = {"HF_TOKEN": "", "HF_HOME": "", "HF_HUB_OFFLINE": "1"}


def _front_matter(readme: str) -> dict[str, Any]:
    assert readme.startswith("---\n")
    return yaml.safe_load(readme.split("---\n")[1])  # type: ignore[no-any-return]


def test_dry_run_shows_the_staged_space(scaffold: Path, tmp_path: Path) -> None:
    stage = tmp_path / "space"
    done = cli("push", str(scaffold), "--dry-run", "--stage-dir", str(stage),
               env={**NO_HUB, "HF_HOME": str(tmp_path / "hf")})
    assert done.returncode == 0, done.stderr
    listed = [line.strip() for line in done.stdout.splitlines()[1:]]
    for path in ("Dockerfile", "README.md", "openenv.yaml", "requirements.txt", "app/demo_env/server/app.py"):
        assert path in listed, (path, listed)
    assert any(line.startswith("src/openenv_train/") for line in listed)
    front = _front_matter((stage / "README.md").read_text())
    assert front["sdk"] == "docker" and front["app_port"] == 8000 and "openenv" in front["tags"]
    dockerfile = (stage / "Dockerfile").read_text()
    assert '"serve", "demo_env.server.app:app"' in dockerfile and "EXPOSE 8000" in dockerfile


def test_no_token_is_a_clear_error(scaffold: Path, tmp_path: Path) -> None:
    done = cli("push", str(scaffold), "--repo-id", "someone/demo", env={**NO_HUB, "HF_HOME": str(tmp_path / "hf")})
    assert done.returncode == 1
    assert "no Hugging Face token" in done.stderr and "huggingface-cli login" in done.stderr


def test_not_an_env_folder_is_a_usage_error(tmp_path: Path) -> None:
    assert cli("push", str(tmp_path), "--dry-run").returncode == 2


class FakeHfApi:
    """Records the Hub calls; the staged folder is read while it still exists (as upload_folder would)."""

    def __init__(self, fail_upload: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.uploaded: list[str] = []
        self.fail_upload = fail_upload

    def whoami(self) -> dict[str, str]:
        return {"name": "tester"}

    def create_repo(self, **kwargs: Any) -> None:
        self.calls.append(("create_repo", kwargs))

    def upload_folder(self, **kwargs: Any) -> None:
        self.calls.append(("upload_folder", kwargs))
        if self.fail_upload:
            raise ConnectionError("network is unreachable")
        root = Path(kwargs["folder_path"])
        self.uploaded = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "src" not in p.parts)


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeHfApi:
    fake = FakeHfApi()
    monkeypatch.setattr(push_module, "_hf_api", lambda token: fake)
    monkeypatch.setenv("HF_TOKEN", "hf_fake_token")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return fake


def test_upload_creates_a_docker_space(scaffold: Path, fake_hub: FakeHfApi, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["push", str(scaffold), "--private"]) == 0
    (create, created), (upload, uploaded) = fake_hub.calls
    assert create == "create_repo" and created == {"repo_id": "tester/demo_env", "repo_type": "space",
                                                   "space_sdk": "docker", "private": True, "exist_ok": True}
    assert upload == "upload_folder" and uploaded["repo_id"] == "tester/demo_env" and uploaded["repo_type"] == "space"
    assert {"Dockerfile", "README.md", "openenv.yaml", "requirements.txt"} <= set(fake_hub.uploaded)
    assert not Path(uploaded["folder_path"]).exists()  # the temporary staging folder is cleaned up
    assert "https://huggingface.co/spaces/tester/demo_env" in capsys.readouterr().out


def test_upload_failure_is_a_clear_error(scaffold: Path, fake_hub: FakeHfApi, capsys: pytest.CaptureFixture[str]) -> None:
    fake_hub.fail_upload = True
    assert main(["push", str(scaffold), "--repo-id", "org/space"]) == 1
    message = capsys.readouterr().err
    assert "org/space" in message and "network is unreachable" in message
