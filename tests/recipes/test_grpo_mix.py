"""GRPO over a mix of envs: the mixing and normalisation units, a smoke run of the recipe over three games (one
pool, per-env metrics, evaluation on each env's held-out split, per-env summary), and an env that fails to start."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from openenv_train.pool import EpisodeSpec, MixEnv, weighted_schedule
from openenv_train.recipes._mix import (
    EnvRewardScale,
    EnvTasks,
    held_out_prompts,
    mix_difference,
    parse_mix,
    train_prompts,
)

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "grpo_smoke.yaml"


def test_the_schedule_follows_the_weights_in_every_stretch() -> None:
    schedule = weighted_schedule({"a": 1, "b": 2, "c": 1}, 400)
    assert Counter(schedule) == {"a": 100, "b": 200, "c": 100}
    for start in range(0, 400, 8):  # every step of 8 groups holds each env near its share
        window = Counter(schedule[start:start + 8])
        assert window["b"] == 4 and window["a"] == window["c"] == 2
    assert weighted_schedule({"a": 1, "b": 2, "c": 1}, 400) == schedule
    with pytest.raises(ValueError, match="weight > 0"):
        weighted_schedule({"a": 0}, 3)


def test_training_tasks_come_from_train_splits_and_never_from_held_out_ones() -> None:
    mix = parse_mix({"catch": 1, "blackjack": {"weight": 1, "options": {"x": 1}}, "counter": 2})
    assert [(e.name, e.weight, dict(e.options)) for e in mix] == [("catch", 1.0, {}), ("blackjack", 1.0, {"x": 1}),
                                                                  ("counter", 2.0, {})]
    tasks = {"catch": EnvTasks("train", "test", 1_000_000, 1_000_000), "blackjack": EnvTasks("train", "test", 50, 5),
             "counter": EnvTasks()}
    prompts = train_prompts(mix, tasks, 120, seed=3, seed_limit=1000)
    assert Counter(p["env"] for p in prompts) == {"catch": 30, "blackjack": 30, "counter": 60}
    assert all(p["split"] == "train" for p in prompts if p["env"] != "counter")
    assert len({p["index"] for p in prompts if p["env"] == "catch"}) == 30  # distinct tasks while the split lasts
    assert {p["index"] for p in prompts if p["env"] == "blackjack"} <= set(range(50))
    assert [p["seed"] for p in prompts if p["env"] == "counter"] == list(range(60))  # seeds: below the held-out
    assert held_out_prompts(mix[1], tasks["blackjack"], 100, 1000) == [
        {"env": "blackjack", "split": "test", "index": i} for i in range(5)]
    assert held_out_prompts(mix[2], tasks["counter"], 2, 1000) == [{"env": "counter", "seed": s} for s in (1000, 1001)]
    with pytest.raises(ValueError, match="raise eval.seed"):
        train_prompts(mix, tasks, 120, seed_limit=10)


@pytest.mark.parametrize("bad", [{}, {"catch": "heavy"}, {"catch": {"weight": 1, "turns": 3}}, {"catch": 0},
                                 {"catch": 1, "x/catch": 1}])
def test_a_bad_mix_is_refused_with_the_fix(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="env|weight|envs"):
        parse_mix(bad)


def test_each_env_is_scaled_by_its_own_spread() -> None:
    scale = EnvRewardScale()
    big = [0.0, 100.0, 50.0, 100.0]
    small = [-1.0, 1.0, 0.0, 1.0]
    out = scale.normalise(["big"] * 4 + ["small"] * 4, big + small)
    # the same pattern at two scales: the same normalised rewards, so neither env drowns the other
    assert out[:4] == pytest.approx([v / scale.scale("big") for v in big])
    assert [b - out[0] for b in out[:4]] == pytest.approx([s - out[4] for s in out[4:]])
    assert scale.normalise(["new", "new"], [None, 2.0]) == [None, 2.0]  # one reward: no spread yet, scale 1


def test_the_mix_difference_counts_each_env_once() -> None:
    after = {"a": [1.0] * 10, "b": [0.0] * 2}
    before = {"a": [0.0] * 10, "b": [0.0] * 2}
    diff = mix_difference(after, before, resamples=200)
    assert diff["envs"]["a"]["mean"] == 1.0 and diff["envs"]["b"]["mean"] == 0.0
    assert diff["mix"]["mean"] == 0.5 == diff["mix"]["ci_low"] == diff["mix"]["ci_high"]


def test_the_mixed_pool_routes_each_task_to_its_env_with_its_options() -> None:
    from openenv_train.pool import MixedPool

    pool = MixedPool([MixEnv("small", "catch", options={"rows": 4}), MixEnv("big", "catch")], lambda obs: {})
    name, spec = pool.route(EpisodeSpec("e1", {"env": "small", "columns": 3}, 5))
    assert (name, spec.task, spec.seed) == ("small", {"rows": 4, "columns": 3}, 5)
    with pytest.raises(ValueError, match="not one of the mix"):
        pool.route(EpisodeSpec("e2", {"seed": 1}))
    assert {p.run_id for p in pool.pools.values()} == {pool.run_id}
    with pytest.raises(ValueError, match="distinct names"):
        MixedPool([MixEnv("a", "catch"), MixEnv("a", "blackjack")], lambda obs: {})


@pytest.mark.timeout(600)
def test_grpo_over_a_mix_of_three_games_smoke(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="trl is not installed")
    from openenv_train.recipes import grpo
    from openenv_train.trace import read_traces

    code = grpo.main(["--config", str(CONFIG), "envs={catch: {weight: 1, options: {rows: 4, columns: 3}}, "
                      "tic_tac_toe: 1, blackjack: 1}", f"output.dir={tmp_path}", "episode.sandbox=off",
                      "grpo.prompts_per_step=3", "eval.episodes=3", "eval.greedy=false"])
    assert code == 0
    out = tmp_path / "grpo-mix-catch-tic_tac_toe-blackjack"
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["grpo"]["envs"]) == {"catch", "tic_tac_toe", "blackjack"}
    for row in summary["grpo"]["envs"].values():
        assert row["untrained"]["n"] == row["trained"]["n"] == 3 and "ci_low" in row["paired"]
    assert summary["grpo"]["mix"]["paired"]["n_envs"] == 3
    assert "| **mix** (mean over envs) |" in (out / "summary.md").read_text()
    assert set(summary["grpo_beam"]["envs"]) == {"catch", "tic_tac_toe", "blackjack"}  # the smoke config's beams
    assert "after GRPO, beam" in (out / "summary.md").read_text()
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rollouts = [r for r in steps if r.get("phase") == "grpo_rollout"]
    assert len(rollouts) == 2 and all(f"{env}/reward" in r for r in rollouts
                                      for env in ("catch", "tic_tac_toe", "blackjack"))
    rows = read_traces(out)
    held = [r for r in rows if r.episode_id.startswith("eval-")]
    trained = [r for r in rows if r.episode_id.startswith("grpo-")]
    # held-out episodes from each env's test split, training ones from its train split (the Task API's)
    assert len(held) == 4 * 3 * 3 and {r.task["split"] for r in held} == {"test"}
    assert len(trained) == 2 * 3 * 2 and {r.task["split"] for r in trained} == {"train"}
    assert {r.env.name for r in rows} == {"catch", "tic_tac_toe", "blackjack"}
    assert all(r.task["rows"] == 4 for r in rows if r.env.name == "catch")
    assert all(r.ok for r in rows)


def test_an_env_that_fails_to_start_names_itself_and_the_recipe_stops(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("trl", reason="trl is not installed")
    from openenv_train.recipes import grpo

    code = grpo.main(["--config", str(CONFIG), "envs={catch: 1, 'http://127.0.0.1:9/': 1}", f"output.dir={tmp_path}",
                      "episode.sandbox=off", "pool.start_timeout_s=60"])
    assert code == 1
    assert "127.0.0.1-9" in capsys.readouterr().out
