"""``recipes.eval samples=N``: N episodes per task, pass@k and mean@N in the summary, the success it used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv_train.recipes import eval as eval_recipe
from openenv_train.recipes import pass_at_k
from openenv_train.trace import read_traces

CATCH = ["env=catch", "agent=action", "options={rows: 4, columns: 3}", "max_turns=30", "per_turn_tokens=4",
         "show_progress=false", "bootstrap_resamples=200"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from openenv_train.policy import build_tiny_model

    path = tmp_path_factory.mktemp("model") / "tiny"
    build_tiny_model(path, seed=0)
    return path


@pytest.mark.timeout(600)
def test_samples_give_pass_at_k_per_task_and_overall(tiny: Path, tmp_path: Path) -> None:
    assert eval_recipe.main([f"model={tiny}", *CATCH, "episodes=3", "samples=4", "temperature=1.0",
                             f"output_dir={tmp_path}", "name=sampled"]) in (0, 1)
    out = tmp_path / "sampled"
    summary = json.loads((out / "summary.json").read_text())
    rows = read_traces(out)
    assert sorted(r.episode_id for r in rows) == [f"eval-{i:04d}-{j}" for i in range(3) for j in range(4)]
    assert all(r.group_id == r.episode_id[:9] and r.task["seed"] == int(r.episode_id[5:9]) for r in rows)
    assert summary["samples"] == 4 and summary["success"] == "reward >= 1 (catch's success threshold in the catalog)"
    metrics = summary["phases"]["eval"]
    assert {"pass@1", "pass@2", "pass@4", "mean@4"} <= set(metrics) and metrics["pass@4"]["n"] == 3
    for task in summary["tasks"]:
        rewards = [r.reward or 0.0 for r in rows if r.group_id == task["task"]]
        c = sum(r >= 1.0 for r in rewards)
        assert task["successes"] == c and task["mean@4"] == pytest.approx(sum(rewards) / 4)
        assert all(task[f"pass@{k}"] == pytest.approx(pass_at_k(4, c, k)) for k in (1, 2, 4))
    mean4 = sum(t["pass@4"] for t in summary["tasks"]) / 3
    assert metrics["pass@4"]["mean"] == pytest.approx(mean4)
    assert metrics["mean@4"]["mean"] == pytest.approx(metrics["reward"]["mean"])
    assert "| pass@4 |" in (out / "summary.md").read_text() and "Per task:" in (out / "summary.md").read_text()

    # one sample per task (the default): today's episode ids and summary, no pass@k
    eval_recipe.main([f"model={tiny}", *CATCH, "episodes=2", f"output_dir={tmp_path}", "name=single"])
    summary = json.loads((tmp_path / "single" / "summary.json").read_text())
    assert set(summary["phases"]["eval"]) == {"reward", "ok", "done"} and "samples" not in summary
    assert sorted(r.episode_id for r in read_traces(tmp_path / "single")) == ["eval-0000", "eval-0001"]


def test_success_definition_and_bad_settings() -> None:
    cfg = eval_recipe.EvalConfig(model="m", env="catch", samples=2, temperature=1.0)
    assert eval_recipe._success_threshold(cfg) == (1.0, "catch's success threshold in the catalog")
    cfg.success_threshold = 0.5
    assert eval_recipe._success_threshold(cfg) == (0.5, "success_threshold set by the user")
    cfg = eval_recipe.EvalConfig(model="m", env="tests.x:Env")
    assert eval_recipe._success_threshold(cfg)[0] == 1.0
    with pytest.raises(ValueError, match="needs temperature > 0"):
        eval_recipe.EvalConfig(model="m", env="catch", samples=4)
    with pytest.raises(ValueError, match="samples must be >= 1"):
        eval_recipe.EvalConfig(model="m", env="catch", samples=0)


def test_a_second_evaluation_into_a_finished_one_is_refused_naming_the_fix(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # the trace writer resumes a folder: a second evaluation there would replay nothing and summarise nothing
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "summary.json").write_text("{}")
    assert eval_recipe.main(["model=no-such-model", "env=catch", f"output_dir={tmp_path}", "show_progress=false"]) == 1
    err = capsys.readouterr().err
    assert "holds a finished evaluation" in err and "name=eval-2" in err
