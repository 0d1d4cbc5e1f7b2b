"""The grid_world env: layouts, goal and pits, walls, slippery moves, seeding, invalid actions, real-server play."""

from __future__ import annotations

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerError
from openenv_train.envs.gridworlds import (
    Cell,
    GridWorldAction,
    GridWorldEnvironment,
    parse_layout,
    shortest_path,
)
from tests.conftest import serve_inloop, serve_process

OPEN = ["S....", ".....", ".....", ".....", "....G"]


def go(env: GridWorldEnvironment, *moves: str) -> list[float | None]:
    return [env.step(GridWorldAction(direction=m)).reward for m in moves]  # type: ignore[arg-type]


# -- layouts -------------------------------------------------------------------------------------
def test_random_layouts_have_the_pits_and_walls_asked_and_a_safe_path() -> None:
    env = GridWorldEnvironment()
    for seed in range(25):
        obs = env.reset(seed=seed, size=6, pits=6, walls=4)
        cells = [cell for row in obs.grid for cell in row]
        assert len(obs.grid) == 6 and all(len(row) == 6 for row in obs.grid)
        assert cells.count(Cell.PIT) == 6 and cells.count(Cell.WALL) == 4 and cells.count(Cell.GOAL) == 1
        assert obs.agent == [0, 0] and obs.goal == [5, 5] and obs.grid[0][0] == Cell.AGENT
        assert shortest_path(obs.grid, (0, 0), (5, 5)) is not None


def test_custom_layouts_are_parsed_and_checked() -> None:
    obs = GridWorldEnvironment().reset(layout=["#S.", "X.G"])
    assert obs.grid == [[Cell.WALL, Cell.AGENT, Cell.EMPTY], [Cell.PIT, Cell.EMPTY, Cell.GOAL]]
    assert obs.text == "#@.\nX.G" and obs.agent == [0, 1] and obs.goal == [1, 2]
    for bad, why in ((["S.", "..G"], "equal length"), (["S?G"], "'\\?'"), (["S..", "..."], "exactly one 'G'"),
                     (["SSG"], "exactly one 'S'"), ([], "non-empty")):
        with pytest.raises(ValueError, match=why):
            parse_layout(bad)
    with pytest.raises(ValueError, match="do not fit"):
        GridWorldEnvironment().reset(size=2, pits=3)


# -- rules and rewards ---------------------------------------------------------------------------
def test_the_goal_pays_one_and_ends_the_episode() -> None:
    env = GridWorldEnvironment()
    assert env.reset(layout=["S.G"]).legal_actions == [0, 1, 2, 3]  # every move, into an edge too
    assert go(env, "right") == [-0.01]
    final = env.step(GridWorldAction(direction="right"))
    assert final.reward == 1.0 and final.done and not final.truncated and env.state.outcome == "goal"
    assert final.legal_actions == []
    frozen = env.state.model_copy(deep=True)
    again = env.step(GridWorldAction(direction="left"))
    assert again.done and again.reward == 0.0 and again.error and env.state == frozen


def test_a_pit_pays_minus_one_and_ends_the_episode() -> None:
    env = GridWorldEnvironment()
    env.reset(layout=["S.G", "X.."])
    obs = env.step(GridWorldAction(direction="down"))
    assert obs.reward == -1.0 and obs.done and obs.agent == [1, 0] and env.state.outcome == "pit"


def test_walls_and_edges_block_and_cost_a_step() -> None:
    env = GridWorldEnvironment()
    env.reset(layout=["S#", ".G"], step_cost=0.05)
    for move in ("right", "up", "left"):
        obs = env.step(GridWorldAction(direction=move))
        assert obs.blocked and obs.agent == [0, 0] and obs.reward == -0.05 and not obs.done and obs.moved == move
    assert env.state.step_count == 3


def test_truncation_after_max_steps() -> None:
    env = GridWorldEnvironment()
    env.reset(layout=OPEN, max_steps=4, step_cost=0.0)
    results = [env.step(GridWorldAction(direction=m)) for m in ("right", "left", "right", "left")]
    assert [r.done for r in results] == [False, False, False, True] and results[-1].truncated
    assert [r.reward for r in results] == [0.0] * 4 and env.state.outcome == "truncated"


# -- slippery moves ------------------------------------------------------------------------------
def test_slippery_moves_go_sideways_with_the_given_probability() -> None:
    env = GridWorldEnvironment()
    env.reset(seed=0, layout=OPEN, slip_prob=1.0, max_steps=1000)
    for _ in range(20):
        obs = env.step(GridWorldAction(direction="down"))
        assert obs.slipped and obs.moved in ("left", "right")
    env.reset(seed=0, layout=OPEN, slip_prob=0.5, max_steps=1000)
    slips = [env.step(GridWorldAction(direction="up")).slipped for _ in range(200)]
    assert 60 < sum(slips) < 140
    env.reset(seed=0, layout=OPEN, max_steps=1000)
    assert not any(env.step(GridWorldAction(direction="up")).slipped for _ in range(50))


def test_same_seed_same_layout_and_same_slips() -> None:
    moves = ["down", "right", "down", "right", "up", "left"] * 3
    runs = []
    for _ in range(2):
        env = GridWorldEnvironment()
        runs.append([env.reset(seed=77, slip_prob=0.3, max_steps=1000)]
                    + [env.step(GridWorldAction(direction=m)) for m in moves])  # type: ignore[arg-type]
    assert runs[0] == runs[1]
    assert len({GridWorldEnvironment().reset(seed=s).text for s in range(8)}) > 1


# -- invalid actions -----------------------------------------------------------------------------
def test_an_action_without_a_direction_is_refused_and_changes_nothing_but_the_count() -> None:
    env = GridWorldEnvironment()
    first = env.reset(seed=6)
    before = env.state.model_copy(deep=True)
    obs = env.step(GridWorldAction())
    assert obs.error and "direction" in obs.error and obs.reward == 0.0 and not obs.done
    assert obs.model_dump(exclude={"error"}) == first.model_dump(exclude={"error"})
    assert env.state == before.model_copy(update={"step_count": 1})


async def test_bad_actions_and_options_are_validation_errors_that_change_nothing() -> None:
    async with serve_inloop(GridWorldEnvironment) as server:
        async with GenericEnvClient(server.url) as env:
            await env.reset(seed=3, episode_id="g")
            await env.step({"action_id": 3})
            before = await env.state()
            for bad in ({"direction": "northwest"}, {"action_id": 7}, {"action_id": True}, {"direction": 1}):
                with pytest.raises(ServerError) as caught:
                    await env.step(bad)
                assert caught.value.code == "VALIDATION_ERROR", bad
            assert await env.state() == before
            with pytest.raises(ServerError) as caught:
                await env.reset(slip_prob=1.5)
            assert caught.value.code == "VALIDATION_ERROR"
            with pytest.raises(ServerError) as caught:
                await env.reset(layout=["S.", "G"])
            assert caught.value.code == "EXECUTION_ERROR" and "equal length" in caught.value.message
            assert await env.state() == before
    with pytest.raises(ValidationError):
        GridWorldEnvironment().reset(step_cost=-1.0)


# -- real server ---------------------------------------------------------------------------------
async def test_bfs_policy_reaches_the_goal_through_a_real_server_and_openenv_client_drives_it() -> None:
    async with serve_process("grid_world") as (endpoint, _):
        async with GenericEnvClient(endpoint.base_url) as env:
            result = await env.reset(seed=8, size=7, pits=8, walls=5)
            obs = result.observation
            path = shortest_path(obs["grid"], tuple(obs["agent"]), tuple(obs["goal"]))
            assert path
            rewards = []
            for move in path:
                assert not result.done
                result = await env.step({"direction": move})
                rewards.append(result.reward)
            assert result.done and rewards[-1] == 1.0 and rewards[:-1] == [-0.01] * (len(path) - 1)
            assert (await env.state())["outcome"] == "goal"

        async with OEGenericEnvClient(base_url=endpoint.base_url) as oe:
            first = await oe.reset(layout=["S.X", "..G"])
            assert first.observation["agent"] == [0, 0] and first.done is False
            r = await oe.step({"action_id": 1})
            assert r.observation["agent"] == [0, 1] and r.reward == -0.01
            r = await oe.step({"direction": "right"})
            assert r.done is True and r.reward == -1.0
