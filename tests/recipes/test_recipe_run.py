"""``RecipeRun``: the run folder, recorded evaluations a resumed run reuses, training steps it skips."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from openenv_train.recipes._recipe_run import RecipeRun
from openenv_train.recipes._rollout_setup import GamesFailed


def _open(out: Path, *, resume: bool = False) -> RecipeRun:
    return RecipeRun.open(out, {"seed": 0}, resume=resume, console=Console(file=io.StringIO()),
                          phases=3)


def _row(ok: bool, reward: float) -> Any:
    return SimpleNamespace(ok=ok, reward=reward, error=None if ok else SimpleNamespace(type="X", message="boom"))


def test_open_writes_the_config_and_refuses_a_second_run_in_the_same_folder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _open(out)
    assert (out / "config.yaml").read_text() == "seed: 0\n"
    (out / "state.json").write_text(json.dumps({"done": [], "evals": {}}))
    with pytest.raises(ValueError, match="holds a run already: resume it with --resume"):
        _open(out)
    _open(out, resume=True)


def test_an_evaluation_is_played_once_and_recorded(tmp_path: Path) -> None:
    run, played = _open(tmp_path / "run"), []

    def play() -> list[Any]:
        played.append(1)
        return [_row(True, 1.0), _row(False, 0.0)]

    kw: dict[str, Any] = {"resamples": 50, "seed": 0, "report": lambda result, n: f"{n} rows"}
    result = run.evaluate("untrained", "untrained", play, lambda row: {"reward": row.reward}, **kw,
                          extra=lambda per_task: {"best": max(t["reward"] for t in per_task)})
    assert list(result) == ["metrics", "per_task", "best", "failed_episodes"]
    assert result["per_task"]["reward"] == [1.0, 0.0] and result["failed_episodes"] == 1
    again = _open(tmp_path / "run", resume=True)
    assert again.evaluate("untrained", "untrained", play, lambda row: {}, **kw) == result and played == [1]
    assert [r["phase"] for r in again.metrics.read()] == ["eval_untrained"]
    with pytest.raises(GamesFailed, match="every game of the after GRPO evaluation failed"):
        run.evaluate("grpo", "after GRPO", lambda: [_row(False, 0.0)], lambda row: {"reward": 0.0}, **kw)


def test_a_training_step_is_skipped_when_off_and_recorded_when_run(tmp_path: Path) -> None:
    run = _open(tmp_path / "run")
    assert run.train("sft", tmp_path, "model", lambda: pytest.fail("trained"), enabled=False,
                     setting="sft.enabled") == "model"
    assert run.train("sft", tmp_path, "model", lambda: ("trained", {"steps": 3}), enabled=True,
                     setting="sft.enabled") == "trained"
    assert run.state.done("sft") and run.state.data["budgets"] == {"sft": {"steps": 3}}
