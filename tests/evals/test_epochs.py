"""The live task's ``epochs``: each episode played k times, Inspect's mean and pass@k reducers (scripted mockllm)."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import eval as inspect_eval

from openenv_train.evals import live_task
from openenv_train.evals.tasks import openenv_live
from openenv_train.trace import read_traces


def _reduced(log: object, key: str) -> dict[str, float]:
    return {s.reducer: s.metrics["mean"].value for s in log.results.scores if s.name == key}  # type: ignore[attr-defined]


def test_epochs_report_pass_at_k(tmp_path: Path) -> None:
    """One Wordle secret, one guess per episode, two epochs: one guesses it, one does not."""
    task = live_task("wordle", "wordle", episodes=1, max_turns=1, reset={"task": "crane"}, replies=["[crane]", "[slate]"],
                     epochs=2, trace_dir=str(tmp_path / "t"))
    log = inspect_eval(task, log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "success" and log.samples and sorted(s.epoch for s in log.samples) == [1, 2]
    assert _reduced(log, "env_reward") == {"mean": 0.5, "pass_at_1": 0.5, "pass_at_2": 1.0}
    assert _reduced(log, "correct") == {"mean": 0.5, "pass_at_1": 0.5, "pass_at_2": 1.0}
    rows = read_traces(tmp_path / "t")
    assert sorted(r.episode_id for r in rows) == ["wordle-1-1", "wordle-1-2"] and sorted(r.reward for r in rows) == [0.0, 1.0]
    # a higher success threshold than any reward: no success at all
    task = live_task("wordle", "wordle", episodes=1, max_turns=1, reset={"task": "crane"}, replies=["[crane]"],
                     epochs=2, success_threshold=2.0)
    log = inspect_eval(task, log_dir=str(tmp_path / "logs"), display="none")[0]
    assert _reduced(log, "env_reward") == {"mean": 1.0, "pass_at_1": 0.0, "pass_at_2": 0.0}


def test_task_file_takes_epochs(tmp_path: Path) -> None:
    """``inspect eval tasks.py@openenv_live -T epochs=3``; one epoch (the default) keeps the mean alone."""
    task = openenv_live("wordle", episodes=1, max_turns=1, replies=["[crane]"], epochs=3)
    assert task.epochs == 3 and task.epochs_reducer is not None
    log = inspect_eval(task, log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "success" and set(_reduced(log, "env_reward")) == {"mean", "pass_at_1", "pass_at_3"}
    assert openenv_live("wordle", episodes=1).epochs is None  # Inspect's default: one epoch, its mean


def test_eval_cli_epochs(tmp_path: Path, capsys: object) -> None:
    from openenv_train.cli import main

    code = main(["eval", "wordle", "--model", "openenv/tiny", "--episodes", "1", "--max-turns", "1", "--epochs", "2",
                 "--log-dir", str(tmp_path / "logs")])
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert code == 0 and "env_reward (pass_at_2)" in out and "2 sample(s)" in out
