"""``openenv-train validate``: each broken thing fails with exit 1 and names the file or endpoint and the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .conftest import cli, free_port


def _copy(scaffold: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "demo_env"
    shutil.copytree(scaffold, folder)
    return folder


def _failed(done_stdout: str) -> dict[str, dict[str, str]]:
    return {c["id"]: c for c in json.loads(done_stdout)["criteria"] if not c["passed"]}


def test_missing_file_names_the_file(scaffold: Path, tmp_path: Path) -> None:
    folder = _copy(scaffold, tmp_path)
    (folder / "client.py").unlink()
    done = cli("validate", str(folder))
    assert done.returncode == 1
    assert "FAIL layout" in done.stdout and "missing: client.py" in done.stdout and "fix:" in done.stdout


def test_bad_manifest_and_entry_point_are_named(scaffold: Path, tmp_path: Path) -> None:
    folder = _copy(scaffold, tmp_path)
    manifest = folder / "openenv.yaml"
    manifest.write_text(manifest.read_text().replace("port: 8000", "port: http"))
    pyproject = folder / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('server = "demo_env.server.app:main"', 'server = "demo_env.server.app"'))
    done = cli("validate", str(folder), "--json")
    failed = _failed(done.stdout)
    assert done.returncode == 1 and set(failed) == {"manifest", "entry_point"}, failed
    assert failed["manifest"]["where"].endswith("openenv.yaml") and "port" in failed["manifest"]["details"]
    assert failed["entry_point"]["where"].endswith("pyproject.toml") and ":main" in failed["entry_point"]["fix"]


def test_app_that_is_not_our_environment_points_to_import(scaffold: Path, tmp_path: Path) -> None:
    folder = _copy(scaffold, tmp_path)
    app = folder / "server" / "app.py"
    app.write_text(app.read_text().replace("app = DemoEnvEnvironment", "app = object"))
    done = cli("validate", str(folder), "--json")
    failed = _failed(done.stdout)
    assert done.returncode == 1 and list(failed) == ["app_class"], failed
    assert "openenv-train import" in failed["app_class"]["fix"]


def test_import_error_is_reported_not_raised(scaffold: Path, tmp_path: Path) -> None:
    folder = _copy(scaffold, tmp_path)
    (folder / "models.py").write_text("raise RuntimeError('broken models')\n")
    done = cli("validate", str(folder))
    assert done.returncode == 1 and "FAIL package_import" in done.stdout and "broken models" in done.stdout


def test_dead_server_and_bad_usage(tmp_path: Path) -> None:
    done = cli("validate", "--url", f"http://127.0.0.1:{free_port()}", "--json")
    assert done.returncode == 1 and list(_failed(done.stdout)) == ["reachable"]
    assert cli("validate", str(tmp_path), "--url", "http://127.0.0.1:1").returncode == 2
    assert cli("validate", str(tmp_path / "nope")).returncode == 2
