"""The interim main job plays real episodes on real servers and writes what it saw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_train.recipes._config import load_config
from openenv_train.recipes.scripted_rollouts import RolloutConfig, main


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_greedy_policy_wins_every_counter_episode_and_random_does_not(tmp_path: Path) -> None:
    assert main([f"output_dir={tmp_path}", "name=greedy", "counter_episodes=40", "echo_episodes=6",
                 "wordle_episodes=12", "concurrency=8"]) == 0
    rows = _rows(tmp_path / "greedy" / "episodes.jsonl")
    counter = [r for r in rows if r["env"] == "counter"]
    assert sorted(r["seed"] for r in counter) == list(range(40))  # every episode exactly once
    assert all(r["ok"] and r["won"] and r["steps"][-1]["value"] == r["target"] for r in counter)
    echo = [r for r in rows if r["env"] == "echo"]
    assert len(echo) == 6 and all(r["tools"] == ["echo_message", "echo_with_length"] and r["won"] for r in echo)
    wordle = [r for r in rows if r["env"] == "wordle"]
    assert sorted(r["seed"] for r in wordle) == list(range(12))
    assert all(r["won"] and r["steps"][-1]["feedback"] == "GGGGG" and r["guesses"] <= 6 for r in wordle)
    summary = json.loads((tmp_path / "greedy" / "summary.json").read_text())
    assert summary["envs"]["counter"]["win_rate"] == 1.0
    assert summary["envs"]["counter"]["steps"] == sum(len(r["steps"]) for r in counter)

    assert main([f"output_dir={tmp_path}", "name=random", "counter_episodes=40", "echo_episodes=0",
                 "wordle_episodes=0", "policy=random"]) == 0
    random_rows = _rows(tmp_path / "random" / "episodes.jsonl")
    assert 0 < sum(r["won"] for r in random_rows) < 40  # overshooting loses some episodes


def test_config_errors_name_the_option(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown option 'polcy'"):
        load_config(RolloutConfig, None, ["polcy=random"])
    with pytest.raises(ValueError, match="option concurrency"):
        load_config(RolloutConfig, None, ["concurrency=many"])
    with pytest.raises(ValueError, match="policy must be"):
        load_config(RolloutConfig, None, ["policy=clever"])
    yaml_path = tmp_path / "c.yaml"
    yaml_path.write_text("concurrency: 4\nbogus: 1\n")
    with pytest.raises(ValueError, match="bogus"):
        load_config(RolloutConfig, yaml_path)
    yaml_path.write_text("concurrency: 4\n")
    assert load_config(RolloutConfig, yaml_path, ["seed=5"]).concurrency == 4
