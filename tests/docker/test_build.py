"""``openenv-train build``: the context it writes (no engine needed) and images of catalog and user envs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from openenv_train.cli import main
from openenv_train.client import GenericEnvClient

pytestmark = pytest.mark.timeout(900)  # the first test may install Docker and build the base image
USER_ENV = '''
from openenv_train.envs.counter import CounterEnvironment


class TinyEnv(CounterEnvironment):
    name = "tiny"
'''


def test_context_for_a_public_base_image(tmp_path: Path) -> None:
    assert main(["build", "wordle", "--no-build", "-o", str(tmp_path / "ctx")]) == 0
    dockerfile = (tmp_path / "ctx" / "Dockerfile").read_text()
    assert dockerfile.startswith("#") and "FROM python:3.11-slim" in dockerfile
    assert 'ENTRYPOINT ["python3", "-m", "openenv_train.cli", "serve", "wordle"]' in dockerfile
    assert "pip install" in dockerfile and "EXPOSE 8000" in dockerfile
    reqs = (tmp_path / "ctx" / "requirements.txt").read_text()
    assert "pydantic" in reqs and "websockets" in reqs
    assert (tmp_path / "ctx" / "src" / "openenv_train" / "envs" / "wordle" / "__init__.py").is_file()


def test_context_of_a_module_class_env_copies_its_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tiny_pkg").mkdir()
    (tmp_path / "tiny_pkg" / "__init__.py").write_text(USER_ENV)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "ctx"
    assert main(["build", "tiny_pkg:TinyEnv", "--no-build", "--base-image", "local/py:3", "--deps", "host",
                 "-o", str(out)]) == 0
    assert (out / "app" / "tiny_pkg" / "__init__.py").read_text() == USER_ENV
    assert "FROM local/py:3" in (out / "Dockerfile").read_text()
    assert (out / "site-packages" / "pydantic").is_dir()


def test_unknown_env_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["build", "no-such-env", "--no-build", "-o", str(tmp_path / "ctx")]) == 2


def test_image_labels_and_default_command(echo_image: str) -> None:
    done = subprocess.run(["docker", "image", "inspect", "--format", "{{json .Config}}", echo_image],
                          capture_output=True, text=True, check=True)
    config = json.loads(done.stdout)
    assert config["Labels"]["org.openenv-train.transport"] == "uds"
    assert config["Cmd"] == ["--host", "0.0.0.0", "--port", "8000"]


async def test_build_and_serve_a_module_class_env(docker_engine: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tiny_pkg").mkdir()
    (tmp_path / "tiny_pkg" / "__init__.py").write_text(USER_ENV)
    monkeypatch.chdir(tmp_path)
    tag = "openenv-train/tiny:test"
    assert main(["build", "tiny_pkg:TinyEnv", "-t", tag, "--base-image", docker_engine, "--deps", "host",
                 "-o", str(tmp_path / "ctx")]) == 0
    async with await GenericEnvClient.from_docker_image(tag) as env:
        await env.reset(target=3)
        assert (await env.step({"delta": 3})).reward == 1.0
    assert os.path.isdir(tmp_path / "ctx")


def test_without_an_engine_the_context_is_left_ready(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ctx"
    assert main(["build", "echo", "--docker", "no-such-docker-cli", "-o", str(out)]) == 0
    assert "not building" in capsys.readouterr().err and (out / "Dockerfile").is_file()


async def test_offline_build_from_downloaded_wheels(docker_engine: str, tmp_path: Path) -> None:
    from openenv_train.containers import build_image, write_context

    try:
        context = write_context("echo", tmp_path / "ctx", base_image=docker_engine, deps="wheels")
    except RuntimeError as exc:  # pip download needs an index
        pytest.skip(f"no package index reachable for the wheels: {exc}"[:300])
    assert "--no-index" in context.dockerfile.read_text()
    tag = build_image(context, "openenv-train/echo:wheels-test")
    async with await GenericEnvClient.from_docker_image(tag) as env:
        assert (await env.reset()).done is False
