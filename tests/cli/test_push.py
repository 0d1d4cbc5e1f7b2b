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


# -- the Space options and the registry -------------------------------------------------------------------------
class PullRequest(str):
    pr_url = "https://huggingface.co/spaces/tester/demo_env/discussions/1"


class FakeHubSettings(FakeHfApi):
    """FakeHfApi that also records Space settings and answers an upload with a pull request when asked."""

    def upload_folder(self, **kwargs: Any) -> Any:
        super().upload_folder(**kwargs)
        return PullRequest("commit") if kwargs.get("create_pr") else None

    def add_space_variable(self, **kwargs: Any) -> None:
        self.calls.append(("add_space_variable", kwargs))

    def add_space_secret(self, **kwargs: Any) -> None:
        self.calls.append(("add_space_secret", kwargs))


@pytest.fixture
def hub_settings(fake_hub: FakeHfApi, monkeypatch: pytest.MonkeyPatch) -> FakeHubSettings:
    fake = FakeHubSettings()
    monkeypatch.setattr(push_module, "_hf_api", lambda token: fake)
    return fake


def test_hardware_variables_and_secrets_reach_the_space(scaffold: Path, tmp_path: Path, hub_settings: FakeHubSettings,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "demo_env"
    import shutil

    shutil.copytree(scaffold, folder)
    with (folder / "openenv.yaml").open("a") as manifest:
        manifest.write("variables:\n  MODEL: from-yaml\n  LEVEL: 1\n")
    assert main(["push", str(folder), "--hardware", "t4-medium", "--env-var", "MODEL=cli=wins",
                 "--secret", "API_KEY=s3cret"]) == 0
    calls = dict((name, kw) for name, kw in hub_settings.calls if name == "create_repo")
    assert calls["create_repo"]["space_hardware"] == "t4-medium"
    settings = [(name, kw["key"], kw["value"]) for name, kw in hub_settings.calls if name.startswith("add_space")]
    assert settings == [("add_space_variable", "MODEL", "cli=wins"), ("add_space_variable", "LEVEL", "1"),
                        ("add_space_secret", "API_KEY", "s3cret")]
    captured = capsys.readouterr()
    assert "s3cret" not in captured.out + captured.err and "API_KEY" in captured.err


def test_create_pr_uploads_a_pull_request(scaffold: Path, hub_settings: FakeHubSettings,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["push", str(scaffold), "--create-pr"]) == 0
    (_, upload), = [c for c in hub_settings.calls if c[0] == "upload_folder"]
    assert upload["create_pr"] is True and "discussions/1" in capsys.readouterr().err


def test_settings_that_cannot_apply_are_refused(scaffold: Path, hub_settings: FakeHubSettings,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["push", str(scaffold), "--create-pr", "--secret", "A=b"]) == 2
    assert "do not combine with --create-pr" in capsys.readouterr().err
    assert main(["push", str(scaffold), "--registry", "ghcr.io/me", "--env-var", "A=b"]) == 2
    assert main(["push", str(scaffold), "--secret", "no-equals-sign"]) == 2
    err = capsys.readouterr().err
    assert "--secret takes KEY=VALUE, got <redacted>" in err and "no-equals-sign" not in err
    assert hub_settings.calls == []


def test_registry_builds_and_pushes_an_image(scaffold: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    pushed: list[tuple[list[str], str]] = []

    def fake_docker_push(staged: Path, tag: str) -> None:  # the registry is a boundary that cannot exist here
        pushed.append((sorted(p.name for p in staged.iterdir()), tag))

    monkeypatch.setattr(push_module, "_docker_push", fake_docker_push)
    assert main(["push", str(scaffold), "--registry", "ghcr.io/me/"]) == 0
    (files, tag), = pushed
    assert tag == "ghcr.io/me/demo_env" and {"Dockerfile", "requirements.txt", "openenv.yaml"} <= set(files)
    assert capsys.readouterr().out.strip() == "ghcr.io/me/demo_env"


# -- fork ---------------------------------------------------------------------------------------------------------
class FakeHubSpaces(FakeHfApi):
    spaces = {"openenv/echo_env"}

    def duplicate_space(self, **kwargs: Any) -> str:
        self.calls.append(("duplicate_space", kwargs))
        if kwargs["from_id"] not in self.spaces:
            raise type("RepositoryNotFoundError", (Exception,), {})(f"404 Client Error: {kwargs['from_id']}")
        return f"https://huggingface.co/spaces/{kwargs.get('to_id') or 'tester/' + kwargs['from_id'].split('/')[1]}"


@pytest.fixture
def hub_spaces(fake_hub: FakeHfApi, monkeypatch: pytest.MonkeyPatch) -> FakeHubSpaces:
    fake = FakeHubSpaces()
    monkeypatch.setattr(push_module, "_hf_api", lambda token: fake)
    return fake


def test_fork_duplicates_a_space(hub_spaces: FakeHubSpaces, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fork", "openenv/echo_env", "--private", "-e", "MODEL=m", "-s", "TOKEN=t0p", "-H", "t4-small",
                 "--repo-id", "tester/my_echo"]) == 0
    (_, kwargs), = hub_spaces.calls
    assert kwargs == {"from_id": "openenv/echo_env", "private": True, "hardware": "t4-small", "to_id": "tester/my_echo",
                      "variables": [{"key": "MODEL", "value": "m"}], "secrets": [{"key": "TOKEN", "value": "t0p"}]}
    out = capsys.readouterr()
    assert out.out.strip() == "https://huggingface.co/spaces/tester/my_echo" and "t0p" not in out.out + out.err
    assert main(["fork", "openenv/echo_env"]) == 0
    assert hub_spaces.calls[-1][1] == {"from_id": "openenv/echo_env", "private": False, "hardware": "cpu-basic"}


def test_fork_of_a_missing_space_or_a_bad_id_is_named(hub_spaces: FakeHubSpaces,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fork", "openenv/no_such_env"]) == 1
    assert "the Space openenv/no_such_env does not exist" in capsys.readouterr().err
    assert main(["fork", "just-a-name"]) == 2
    assert "source Space must be OWNER/NAME, got 'just-a-name'" in capsys.readouterr().err
