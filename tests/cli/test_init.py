"""``openenv-train init``: the scaffold installs, passes its own tests and validate, and serves what validate accepts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from .conftest import ROOT, cli, free_port, stop, wait_healthy


def test_scaffold_has_openenv_layout_and_manifest(scaffold: Path) -> None:
    files = sorted(str(p.relative_to(scaffold)) for p in scaffold.rglob("*") if p.is_file())
    assert files == ["README.md", "__init__.py", "client.py", "models.py", "openenv.yaml", "pyproject.toml",
                     "server/Dockerfile", "server/__init__.py", "server/app.py", "server/demo_env_environment.py",
                     "tests/test_demo_env.py"]
    manifest = yaml.safe_load((scaffold / "openenv.yaml").read_text())
    assert manifest == {"spec_version": 1, "name": "demo_env", "type": "space", "runtime": "openenv-train",
                        "app": "server.app:app", "port": 8000}
    assert "__ENV_" not in "".join(p.read_text() for p in scaffold.rglob("*") if p.is_file())


def test_bad_names_and_existing_folders_are_usage_errors(tmp_path: Path, scaffold: Path) -> None:
    for name in ("Bad-Name", "server"):
        done = cli("init", name, "-o", str(tmp_path))
        assert done.returncode == 2 and "error:" in done.stderr, (name, done.stderr)
    done = cli("init", "demo_env", "-o", str(scaffold.parent))
    assert done.returncode == 2 and "--force" in done.stderr
    assert not list(tmp_path.iterdir())


def test_validate_accepts_the_scaffold(scaffold: Path) -> None:
    done = cli("validate", str(scaffold), "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["passed"], done.stdout
    assert {c["id"] for c in report["criteria"]} >= {"layout", "manifest", "entry_point", "app_class", "schemas"}


def test_openenv_validate_accepts_the_layout(scaffold: Path) -> None:
    """OpenEnv's own local checks (what 'openenv validate DIR' runs) and its push-time structure check."""
    from openenv.cli._cli_utils import validate_env_structure
    from openenv.cli._validation import validate_multi_mode_deployment

    _, issues = validate_multi_mode_deployment(scaffold)
    # its only complaint can be the missing uv.lock, which 'init' writes only where uv is installed
    assert set(issues) <= {"Missing uv.lock - run 'uv lock' to generate it"}, issues
    validate_env_structure(scaffold)  # raises on a missing file


def test_installed_package_passes_its_tests_and_serves(venv_python: Path, scaffold: Path, tmp_path: Path) -> None:
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    tests = subprocess.run([str(venv_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=scaffold,
                           capture_output=True, text=True, timeout=120, env=environ)
    assert tests.returncode == 0 and "4 passed" in tests.stdout, tests.stdout + tests.stderr
    # the package's own server entry point ([project.scripts] server), installed into the venv
    port = free_port()
    server = subprocess.Popen([str(venv_python.with_name("server")), "--host", "127.0.0.1", "--port", str(port)],
                              cwd=tmp_path, env=environ, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url)
        done = cli("validate", "--url", url, "--json")
        report = json.loads(done.stdout)
        assert done.returncode == 0 and report["validation_type"] == "running_environment", done.stdout
        assert {"ws_reset_step", "ws_bad_action", "ws_unknown_type", "health_endpoint"} <= {c["id"] for c in report["criteria"]}
        from openenv.cli._validation import validate_running_environment  # what 'openenv validate --url' runs

        theirs = validate_running_environment(url)
        assert theirs["passed"], theirs["criteria"]
    finally:
        stop(server)
