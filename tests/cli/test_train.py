"""``openenv-train train``: runs a recipe's main with --config and overrides; unknown recipes are usage errors."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import ROOT, cli


def test_list_names_the_recipes() -> None:
    done = cli("train", "--list")
    assert done.returncode == 0
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert {"collect", "scripted_rollouts"} <= set(names)


def test_unknown_recipe_names_the_available_ones() -> None:
    done = cli("train", "colect")
    assert done.returncode == 2 and "did you mean 'collect'" in done.stderr and "scripted_rollouts" in done.stderr


def test_recipe_runs_with_config_and_overrides(tmp_path: Path) -> None:
    done = cli("train", "scripted_rollouts", "--config", str(ROOT / "configs" / "scripted_rollouts.yaml"),
               "--set", f"output_dir={tmp_path}", "--set", "name=cli", "--set", "wordle_episodes=1",
               "--set", "counter_episodes=2", "--set", "echo_episodes=1", "--set", "concurrency=2", timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert summary["config"]["counter_episodes"] == 2 and summary["config"]["name"] == "cli"


def test_bad_override_is_a_usage_error(tmp_path: Path) -> None:
    done = cli("train", "collect", "--set", "no_such_option=1")
    assert done.returncode == 2 and "no_such_option" in done.stderr
    assert cli("train", "collect", "--set", "novalue").returncode == 2
    assert cli("train", "collect", "--config", str(tmp_path / "missing.yaml")).returncode == 2
