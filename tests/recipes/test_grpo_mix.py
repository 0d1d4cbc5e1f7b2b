"""GRPO over a mix of envs: the mixing and normalisation units, a smoke run of the recipe over three games given in
three forms (a name, a URL, ``module:Class``; one pool, per-env metrics and token limits, evaluation on each env's
held-out split, per-env summary), the env a folder of Harbor tasks plays through, and an env that fails to start."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
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

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "grpo_smoke.yaml"
HELLO = ROOT / "openenv_train" / "harbor" / "examples" / "hello-world"
BLACKJACK = "openenv_train.envs.python_games:BlackjackEnvironment"


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
                                 {"catch": 1, "x/catch": 1}, {"catch": {"max_tokens": 0}},
                                 {"catch": {"request": "guided"}}])
def test_a_bad_mix_is_refused_with_the_fix(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="env|weight|envs"):
        parse_mix(bad)


def test_each_entry_carries_its_limits_and_a_harbor_folder_plays_through_its_env(tmp_path: Path) -> None:
    from openenv_train.pool import PoolConfig
    from openenv_train.pool._mix import env_config
    from openenv_train.recipes._mix import HARBOR_FOLDER_ENV

    made: list[str] = []
    text, folder = parse_mix({"reasoning_gym": {"max_tokens": 6, "max_turns": 1, "reply_field": "answer",
                                                "request": {"guided_regex": "[0-9]+"}},
                              str(HELLO.parent): {"weight": 2, "options": {"max_steps": 3}}},
                             make_agent=lambda field: made.append(field) or field)
    assert made == ["answer", "command"] and (text.agent, folder.agent) == ("answer", "command")
    cfg = env_config(PoolConfig(max_turns=30, sampling={"top_p": 0.9}, sandbox=True), text)
    assert (cfg.max_turns, cfg.sampling, cfg.sandbox) == (1, {"top_p": 0.9, "guided_regex": "[0-9]+", "max_tokens": 6},
                                                          True)
    assert (folder.name, folder.env, folder.sandbox) == ("examples", HARBOR_FOLDER_ENV, False)
    assert folder.options == {"tasks_dir": str(HELLO.parent), "max_steps": 3}
    assert env_config(PoolConfig(sandbox=True), folder).sandbox is False  # its env sandboxes each task itself
    (tmp_path / "plain").mkdir()
    assert parse_mix({str(tmp_path / "plain"): 1})[0].env == str(tmp_path / "plain")  # not a Harbor folder


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


@pytest.fixture
def tic_tac_toe_url() -> Iterator[str]:
    from openenv_train.launch import LocalProcessProvider

    provider = LocalProcessProvider("tic_tac_toe")
    endpoint = asyncio.run(provider.start())
    try:
        yield endpoint.base_url
    finally:
        asyncio.run(provider.stop(grace_s=5.0))


@pytest.mark.timeout(600)
def test_grpo_over_a_mix_of_three_games_smoke(tmp_path: Path, tic_tac_toe_url: str) -> None:
    pytest.importorskip("trl", reason="trl is not installed")
    from openenv_train.recipes import grpo
    from openenv_train.trace import read_traces

    # three forms: a catalog name (with its own per-call token limit), a running server's URL, module:Class
    url_name = tic_tac_toe_url.split("://", 1)[1].strip("/").replace(":", "-")
    code = grpo.main(["--config", str(CONFIG), "envs={catch: {weight: 1, options: {rows: 4, columns: 3}, max_tokens: 2}, "
                      f"'{tic_tac_toe_url}': 1, '{BLACKJACK}': 1}}",
                      f"output.dir={tmp_path}", "episode.sandbox=off", "grpo.prompts_per_step=3", "eval.episodes=3",
                      "eval.greedy=false"])
    assert code == 0
    names = ("catch", url_name, "BlackjackEnvironment")
    out = tmp_path / f"grpo-mix-{'-'.join(names)}"
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["grpo"]["envs"]) == set(names)
    for row in summary["grpo"]["envs"].values():
        assert row["untrained"]["n"] == row["trained"]["n"] == 3 and "ci_low" in row["paired"]
    assert summary["grpo"]["mix"]["paired"]["n_envs"] == 3
    assert "| **mix** (mean over envs) |" in (out / "summary.md").read_text()
    assert set(summary["grpo_beam"]["envs"]) == set(names)  # the smoke config's beams
    assert "after GRPO, beam" in (out / "summary.md").read_text()
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rollouts = [r for r in steps if r.get("phase") == "grpo_rollout"]
    assert len(rollouts) == 2 and all(f"{env}/reward" in r for r in rollouts for env in (*names, "mix"))
    rows = read_traces(out)
    held = [r for r in rows if r.episode_id.startswith("eval-")]
    trained = [r for r in rows if r.episode_id.startswith("grpo-")]
    # held-out episodes from each env's test split, training ones from its train split (the Task API's)
    assert len(held) == 4 * 3 * 3 and {r.task["split"] for r in held} == {"test"}
    assert len(trained) == 2 * 3 * 2 and {r.task["split"] for r in trained} == {"train"}
    game = {"catch": "catch", tic_tac_toe_url: "tic_tac_toe", BLACKJACK: "blackjack"}  # a row names its env as given
    assert {r.env.name for r in rows} == set(game)
    assert all(r.task["rows"] == 4 for r in rows if r.env.name == "catch")
    assert all(r.ok for r in rows)
    # each env's per-call token limit reached the engine, in training and in evaluation: catch's own, the others
    # the recipe's grpo.per_turn_tokens
    limits: dict[tuple[str, str], set[int]] = {}
    for r in rows:
        limits.setdefault((game[r.env.name], r.episode_id[:4]), set()).update(
            t.metadata["sampling_used"]["max_tokens"] for t in r.trace.turns)
    assert limits[("catch", "grpo")] == limits[("catch", "eval")] == {2}
    tokens = grpo.GrpoConfig().grpo.per_turn_tokens
    assert {limits[(env, phase)] == {tokens} for env in ("tic_tac_toe", "blackjack") for phase in ("grpo", "eval")} \
        == {True}


def test_a_folder_of_harbor_tasks_plays_as_an_env_of_the_mix() -> None:
    from tests._system_parts import require

    require("sandbox")
    from openenv_train.client import GenericEnvClient
    from openenv_train.recipes._mix import discover_tasks

    harbor = parse_mix({str(HELLO.parent): {"options": {"max_steps": 2}}})[0]
    assert discover_tasks(harbor.env) == EnvTasks()  # tasks, not splits: drawn by seed

    async def play() -> list[tuple[float | None, bool, str]]:
        seen = []
        async with await GenericEnvClient.from_env(str(harbor.env), provider="inprocess") as env:
            # what the mix's pool sends: the entry's options, the task's seed
            first = await env.reset(**harbor.options, task="hello-world", seed=3)
            seen.append((first.reward, first.done, first.observation["text"]))
            wrong = await env.step({"command": "echo 'Hello' > hello.txt"})
            seen.append((wrong.reward, wrong.done, wrong.observation["text"]))
            ended = await env.step({"command": "cat hello.txt"})  # max_steps reached: the tests run
            seen.append((ended.reward, ended.done, ended.observation["verifier_output"]))
            await env.reset(**harbor.options, task="hello-world")
            solved = await env.step({"command": "echo 'Hello, world!' > hello.txt", "submit": True})
            seen.append((solved.reward, solved.done, solved.observation["verifier_output"]))
        return seen

    (r0, d0, text), (r1, d1, _), (r2, d2, out2), (r3, d3, out3) = asyncio.run(play())
    assert "hello.txt" in text and '{"command"' in text and (r0, d0) == (0.0, False)
    assert (r1, d1) == (0.0, False)
    assert (r2, d2) == (0.0, True) and "missing or wrong" in out2
    assert (r3, d3) == (1.0, True) and "hello.txt is correct" in out3


def test_an_env_that_fails_to_start_names_itself_and_the_recipe_stops(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("trl", reason="trl is not installed")
    from openenv_train.recipes import grpo

    code = grpo.main(["--config", str(CONFIG), "envs={catch: 1, 'http://127.0.0.1:9/': 1}", f"output.dir={tmp_path}",
                      "episode.sandbox=off", "pool.start_timeout_s=60"])
    assert code == 1
    assert "127.0.0.1-9" in capsys.readouterr().out
