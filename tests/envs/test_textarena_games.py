"""textarena/<game>: seeded offline TextArena puzzles, played over the wire by OpenEnv's client."""

from __future__ import annotations

import random

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient

from openenv_train.envs import get_spec, list_envs, load_env_class
from tests.conftest import serve_inloop

pytest.importorskip("textarena")

HANOI = ["[A C]", "[A B]", "[C B]", "[A C]", "[B A]", "[B C]", "[A C]"]


def test_the_same_seed_gives_the_same_game_whatever_the_global_random_state() -> None:
    cls = load_env_class("textarena/minesweeper")
    texts = []
    for noise in (1, 2):
        random.seed(noise)
        env = cls()
        first = env.reset(seed=11)
        random.random()
        texts.append((first.prompt, env.step(cls.action_type(message="[reveal 3 3]")).text))
    assert texts[0] == texts[1]


async def test_openenv_client_solves_tower_of_hanoi() -> None:
    async with serve_inloop(load_env_class("textarena/tower_of_hanoi")) as server:
        async with OEGenericEnvClient(base_url=server.url) as client:
            result = await client.reset(seed=1)
            assert "A: [3, 2, 1]" in result.observation["prompt"]
            for move in HANOI:
                assert result.done is False
                result = await client.step({"message": move})
            assert result.done is True and result.reward == 1.0
            assert "solved" in result.observation["reason"]
            assert (await client.state())["step_count"] == len(HANOI)


def test_invalid_moves_end_the_game_and_the_episode_stays_over() -> None:
    cls = load_env_class("textarena/sudoku")
    env = cls()
    env.reset(seed=3)
    obs = env.step(cls.action_type(message="nonsense"))
    steps = 1
    while not obs.done and steps < 10:
        assert obs.invalid_move
        obs = env.step(cls.action_type(message="nonsense"))
        steps += 1
    assert obs.done and steps < 10 and obs.reason
    after = env.step(cls.action_type(message="[1 1 1]"))
    assert after.done and "game is over" in after.text


def test_every_catalog_game_names_the_textarena_extra() -> None:
    names = [s.name for s in list_envs() if s.name.startswith("textarena/")]
    assert len(names) >= 10
    assert all(get_spec(n).install == "pip install 'openenv-train[textarena]'" for n in names)
