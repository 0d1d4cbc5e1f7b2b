"""OpenEnv 0.10's Task API on our server (in-process servers, our client over HTTP): routes, errors, names with
``/``, ``reset(split=..., index=...)``, and the catalog envs' splits (declared, disjoint, each task playable)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import openenv_train.envs  # noqa: F401  (the catalog: in-process servers find the names through it)
from openenv_train.client import GenericEnvClient, TaskApiError, TaskClient, TasksNotSupported
from openenv_train.core import Observation, ServerError
from openenv_train.envs.python_games import CatchEnvironment
from openenv_train.launch import InProcessProvider
from openenv_train.server import Environment, TaskSplit, listed_split, seed_splits


async def test_catch_serves_seed_splits_and_reset_by_task_is_reset_by_its_seed() -> None:
    async with GenericEnvClient(provider=InProcessProvider("catch")) as env:
        assert await env.list_environments() == ["catch"]
        assert [(s["name"], s["type"]) for s in await env.list_splits()] == [("train", "train"), ("test", "test")]
        task = await env.get_task("test", 7)
        assert task == {"id": "test-7", "index": 7, "seed": 1_000_007}
        by_task = (await env.reset(split="test", index=7)).observation
        by_seed = (await env.reset(seed=1_000_007)).observation
        assert by_task == by_seed
        # the task's own options win over a seed sent beside them (the pool sends one with every episode)
        assert (await env.reset(split="test", index=7, seed=3)).observation == by_seed
        with pytest.raises(ServerError, match="outside split 'test'"):
            await env.reset(split="test", index=1_000_000)
        with pytest.raises(ServerError, match="unknown split 'dev'"):
            await env.reset(split="dev", index=0)
        with pytest.raises(TaskApiError, match="unknown split") as refused:
            await env.num_tasks("dev")
        assert refused.value.status == 400


async def test_an_env_without_tasks_answers_501_and_refuses_reset_by_task() -> None:
    async with GenericEnvClient(provider=InProcessProvider("counter")) as env:
        with pytest.raises(TasksNotSupported, match="501"):
            await env.list_splits()
        with pytest.raises(ServerError, match="declares no task splits"):
            await env.reset(split="test", index=0)


class _Slashed(Environment[Any, Observation, Any]):
    """An env whose catalog-style name holds a slash."""

    name = "family/game"

    def reset(self, *, seed: int | None = None, episode_id: str | None = None, word: str = "") -> Observation:  # type: ignore[override]
        return Observation(metadata={"word": word})

    def task_splits(self) -> list[TaskSplit]:
        return [listed_split("test", "test", ["a", "b"], "word")]


async def test_a_name_with_a_slash_is_its_own_route_prefix_raw_or_encoded() -> None:
    provider = InProcessProvider(_Slashed)
    endpoint = await provider.start()
    try:
        async with httpx.AsyncClient(base_url=endpoint.base_url, timeout=30) as http:
            for path in ("/family/game/num_tasks", "/family%2Fgame/num_tasks", "/FAMILY/Game/num_tasks"):
                reply = await http.post(path, json={"split": "test"})
                assert (reply.status_code, reply.json()) == (200, {"num_tasks": 2}), path
            assert (await http.post("/family/num_tasks", json={"split": "test"})).status_code == 404
            assert (await http.get("/family/game/num_tasks")).status_code == 405
            assert (await http.post("/family/game/tasks", json={"split": "test", "extra": 1})).status_code == 422
            spec = (await http.get("/openapi.json")).json()["paths"]
            assert "/family/game/task_range" in spec and "/list_environments" in spec
        tasks = TaskClient(endpoint)
        assert await tasks.get_task_range("test") == [{"id": "test-0", "index": 0, "word": "a"},
                                                      {"id": "test-1", "index": 1, "word": "b"}]
        async with GenericEnvClient(endpoint.base_url) as env:
            assert (await env.reset(split="test", index=1)).metadata == {"word": "b"}
    finally:
        await provider.stop()


def _all_tasks(env: Environment[Any, Any, Any], split: dict[str, Any]) -> list[str]:
    """Every task of a split as a comparable key (seed ranges by their bounds: a million seeds each)."""
    found = next(s for s in env.task_splits() if s.name == split["name"])
    if isinstance(found.tasks, range):
        return [f"range:{found.tasks.start}:{found.tasks.stop}"]
    return [repr(found.reset_options(i)) for i in range(len(found))]


@pytest.mark.parametrize("name", ["catch", "tic_tac_toe", "blackjack", "connect4", "kuhn_poker", "2048", "wordle",
                                  "coding", "reasoning_gym"])
def test_catalog_envs_declare_disjoint_splits_with_a_held_out_one(name: str) -> None:
    from openenv_train.envs import load_env_class

    env = load_env_class(name)()
    try:
        splits = env.list_splits()
        assert any(s["type"] == "test" for s in splits), splits
        assert all(s["num_tasks"] == env.num_tasks(s["name"]) > 0 for s in splits)
        keys = {s["name"]: _all_tasks(env, s) for s in splits}
        ranges = [env.task_splits()[i].tasks for i in range(len(splits))]
        if all(isinstance(r, range) for r in ranges):  # seed ranges: no two overlap
            assert all(a.stop <= b.start or b.stop <= a.start for i, a in enumerate(ranges) for b in ranges[i + 1:])
        else:
            flat = [k for ks in keys.values() for k in ks]
            assert len(flat) == len(set(flat)), f"{name}: a task in two splits"
        test = next(s["name"] for s in splits if s["type"] == "test")
        assert env.get_task(test, 0) == env.get_task_range(test, 0, 1)[0] == env.list_tasks(test)[0]
    finally:
        env.close()


def test_seed_splits_stay_apart_from_the_general_recipe_training_seeds() -> None:
    train, test = seed_splits()
    assert (train.tasks.start, train.tasks.stop, test.tasks.start) == (0, 1_000_000, 1_000_000)
    assert CatchEnvironment().task_reset_options("test", 0) == {"seed": 1_000_000}


def test_the_wordle_server_serves_the_recipe_word_splits_for_its_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv_train.envs.wordle import SPLIT_SEED_ENV, WordleEnvironment
    from openenv_train.recipes.grpo_wordle import GrpoWordleConfig

    monkeypatch.setenv(SPLIT_SEED_ENV, "3")
    held, _, grpo = GrpoWordleConfig(seed=3).secret_splits()
    env = WordleEnvironment()
    assert [t["task"] for t in env.get_task_range("held_out")] == held
    assert set(grpo) <= {t["task"] for t in env.get_task_range("grpo")}
    env.reset(**env.task_reset_options("held_out", 4))  # what the server does for reset(split=..., index=...)
    assert env.state.secret == held[4]
