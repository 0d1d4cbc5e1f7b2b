"""``validate --level static|runtime|semantic`` and ``--policy``: OpenEnv's levels and severity policies."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT, cli, stop, wait_ready


def _copy(scaffold: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "demo_env"
    shutil.copytree(scaffold, folder)
    return folder


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_semantic_starts_a_real_server_and_replays_it(scaffold: Path) -> None:
    done = cli("validate", str(scaffold), "--level", "semantic", "--policy", "v2", "--json")
    report = _report(done)
    ids = [c["id"] for c in report["criteria"]]  # type: ignore[union-attr]
    assert done.returncode == 0 and report["passed"] and (report["level"], report["policy"]) == ("semantic", "v2")
    assert {"manifest", "startup", "ws_reset_step", "replayability", "reward_well_formed"} <= set(ids)
    static = _report(cli("validate", str(scaffold), "--level", "static", "--json"))
    assert "startup" not in [c["id"] for c in static["criteria"]]  # type: ignore[union-attr]


def test_an_env_that_ignores_the_seed_fails_replayability(scaffold: Path, tmp_path: Path) -> None:
    folder = _copy(scaffold, tmp_path)
    env = folder / "server" / "demo_env_environment.py"
    env.write_text("import random\n" + env.read_text().replace("reward=0.1 * length", "reward=random.random()"))
    done = cli("validate", str(folder), "--level", "semantic")
    assert done.returncode == 1, done.stdout
    assert "FAIL replayability" in done.stdout and "random.Random(seed)" in done.stdout
    assert cli("validate", str(folder), "--level", "runtime").returncode == 0  # runtime does not replay


def test_a_policy_turns_a_layout_failure_into_a_warning(scaffold: Path, tmp_path: Path) -> None:
    folder = _copy(scaffold, tmp_path)
    (folder / "README.md").unlink()
    assert cli("validate", str(folder)).returncode == 1  # no policy: every failure fails, as before
    done = cli("validate", str(folder), "--policy", "v1", "--json")
    report = _report(done)
    assert done.returncode == 0 and report["warnings"] == ["layout"], done.stdout
    assert "WARN layout" in cli("validate", str(folder), "--policy", "v1").stdout


def test_unknown_level_or_policy_and_static_on_a_url_are_named(scaffold: Path) -> None:
    done = cli("validate", str(scaffold), "--level", "dynamic")
    assert done.returncode == 2 and "unknown level 'dynamic'; use one of: static, runtime, semantic" in done.stderr
    done = cli("validate", str(scaffold), "--policy", "v9")
    assert done.returncode == 2 and "unknown severity policy 'v9'; use one of: v1, v2" in done.stderr
    done = cli("validate", "--url", "http://127.0.0.1:1", "--level", "static")
    assert done.returncode == 2 and "--level static reads an env folder" in done.stderr


def test_semantic_on_a_running_production_server(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    server = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", "counter", "--port", "0",
                               "--mode", "production", "--ready-file", str(ready)],
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    try:
        url = wait_ready(ready, server, timeout_s=90)
        done = cli("validate", "--url", url, "--level", "semantic", "--json")
        report = _report(done)
        assert done.returncode == 0 and report["passed"], done.stdout
        assert "replayability" in [c["id"] for c in report["criteria"]]  # type: ignore[union-attr]
    finally:
        stop(server)
