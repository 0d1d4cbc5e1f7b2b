"""The maze env: perfect solvable mazes, walls, rewards, seeding, invalid actions, real-server play."""

from __future__ import annotations

from collections import deque

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerError
from openenv_train.envs.gridworlds import DIRECTIONS, Cell, MazeAction, MazeEnvironment, shortest_path
from tests.conftest import serve_inloop, serve_process

Pos = tuple[int, int]


def open_neighbours(grid: list[list[int]], pos: Pos) -> list[Pos]:
    r, c = pos
    around = [(r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)]
    return [(y, x) for y, x in around if 0 <= y < len(grid) and 0 <= x < len(grid[0]) and grid[y][x] != Cell.WALL]


def reachable(grid: list[list[int]], start: Pos) -> set[Pos]:
    seen, queue = {start}, deque([start])
    while queue:
        for nxt in open_neighbours(grid, queue.popleft()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


# -- rules ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [2, 3, 5, 8, 13])
def test_every_maze_is_a_perfect_maze_whose_exit_bfs_reaches(size: int) -> None:
    env = MazeEnvironment()
    for seed in range(12):
        obs = env.reset(seed=seed, size=size)
        grid, n = obs.grid, 2 * size + 1
        assert len(grid) == n and all(len(row) == n for row in grid)
        assert all(grid[0][i] == grid[-1][i] == grid[i][0] == grid[i][-1] == Cell.WALL for i in range(n))
        assert obs.agent == [1, 1] and obs.exit == [n - 2, n - 2] and grid[n - 2][n - 2] == Cell.GOAL
        open_cells = {(r, c) for r in range(n) for c in range(n) if grid[r][c] != Cell.WALL}
        assert (n - 2, n - 2) in reachable(grid, (1, 1))
        assert reachable(grid, (1, 1)) == open_cells  # connected ...
        edges = sum(len(open_neighbours(grid, p)) for p in open_cells) // 2
        assert edges == len(open_cells) - 1  # ... and without cycles: one path between any two cells
        assert len(open_cells) == 2 * size * size - 1  # every maze cell plus the openings of a spanning tree


def test_walls_block_moves_without_moving_the_agent() -> None:
    env = MazeEnvironment()
    env.reset(seed=3, size=4)
    before = env.state.model_copy(deep=True)
    obs = env.step(MazeAction(direction="up"))  # the border is above the start cell
    assert obs.blocked and obs.agent == [1, 1] and obs.reward == 0.0 and not obs.done and obs.error is None
    assert env.state.agent == before.agent and env.state.step_count == before.step_count + 1


def test_open_moves_move_one_cell() -> None:
    env = MazeEnvironment()
    obs = env.reset(seed=5, size=4)
    deltas = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
    move = next(d for d, (dr, dc) in deltas.items() if obs.grid[1 + dr][1 + dc] != Cell.WALL)
    after = env.step(MazeAction(direction=move))
    assert not after.blocked and after.agent != [1, 1] and abs(after.agent[0] - 1) + abs(after.agent[1] - 1) == 1
    assert after.grid[after.agent[0]][after.agent[1]] == Cell.AGENT and after.text.count("@") == 1


# -- rewards -------------------------------------------------------------------------------------
def test_reaching_the_exit_pays_one_and_ends_the_episode() -> None:
    env = MazeEnvironment()
    obs = env.reset(seed=11, size=6)
    path = shortest_path(obs.grid, (1, 1), (obs.exit[0], obs.exit[1]))
    assert path
    rewards = [env.step(MazeAction(direction=d)).reward for d in path[:-1]]
    final = env.step(MazeAction(direction=path[-1]))
    assert rewards == [0.0] * (len(path) - 1)
    assert final.reward == 1.0 and final.done and not final.truncated and final.agent == final.exit
    assert env.state.solved and env.state.step_count == len(path)
    frozen = env.state.model_copy(deep=True)
    again = env.step(MazeAction(direction="up"))
    assert again.done and again.reward == 0.0 and again.error and "reset" in again.error
    assert env.state == frozen


def test_step_penalty_and_truncation_after_max_steps() -> None:
    env = MazeEnvironment()
    env.reset(seed=2, size=3, step_penalty=0.1, max_steps=3)
    results = [env.step(MazeAction(direction="up")) for _ in range(3)]
    assert [r.reward for r in results] == [-0.1, -0.1, -0.1]
    assert [r.done for r in results] == [False, False, True]
    assert results[-1].truncated and env.state.truncated and not env.state.solved


def test_default_max_steps_scales_with_size() -> None:
    assert MazeEnvironment().reset(seed=0, size=5).max_steps == 100


# -- seeding -------------------------------------------------------------------------------------
def test_same_seed_same_maze_and_episode() -> None:
    a, b = MazeEnvironment(), MazeEnvironment()
    assert a.reset(seed=42, size=7) == b.reset(seed=42, size=7)
    moves = ["down", "right", "right", "up", "left", "down"]
    assert [a.step(MazeAction(direction=m)) for m in moves] == [b.step(MazeAction(direction=m)) for m in moves]
    assert len({MazeEnvironment().reset(seed=s, size=7).text for s in range(6)}) > 1


# -- actions -------------------------------------------------------------------------------------
def test_action_ids_name_the_directions() -> None:
    env = MazeEnvironment()
    for action_id, direction in enumerate(DIRECTIONS):
        env.reset(seed=9, size=4)
        by_name = env.step(MazeAction(direction=direction))
        env.reset(seed=9, size=4)
        assert env.step(MazeAction(action_id=action_id)) == by_name
    assert MazeAction(direction="left", action_id=3).resolved() == "left"
    assert [MazeAction(action_id=i).resolved() for i in range(4)] == ["up", "right", "down", "left"]
    with pytest.raises(ValidationError, match="disagree"):
        MazeAction(direction="left", action_id=1)


def test_an_action_without_a_direction_is_refused_and_leaves_the_maze_alone() -> None:
    env = MazeEnvironment()
    first = env.reset(seed=4, size=4)
    before = env.state.model_copy(deep=True)
    obs = env.step(MazeAction())
    assert obs.error and "direction" in obs.error and "action_id" in obs.error
    assert obs.reward == 0.0 and not obs.done
    assert obs.model_dump(exclude={"error"}) == first.model_dump(exclude={"error"})
    assert env.state == before.model_copy(update={"step_count": 1})


async def test_bad_actions_and_options_are_validation_errors_that_change_nothing() -> None:
    async with serve_inloop(MazeEnvironment) as server:
        async with GenericEnvClient(server.url) as env:
            await env.reset(seed=1, size=3, episode_id="m")
            await env.step({"direction": "down"})
            before = await env.state()
            for bad in ({"direction": "north"}, {"direction": "UP"}, {"action_id": 4}, {"action_id": -1},
                        {"action_id": "1"}, {"action_id": 1.5}, {"direction": "up", "action_id": 1}, {"jump": 1}):
                with pytest.raises(ServerError) as caught:
                    await env.step(bad)
                assert caught.value.code == "VALIDATION_ERROR", bad
            assert await env.state() == before
            with pytest.raises(ServerError) as caught:
                await env.reset(size=1)
            assert caught.value.code == "VALIDATION_ERROR" and "size" in caught.value.message
            assert await env.state() == before
    with pytest.raises(ValidationError):
        MazeEnvironment().reset(size=41)


# -- real server ---------------------------------------------------------------------------------
async def test_bfs_policy_solves_it_through_a_real_server_and_openenv_client_drives_it() -> None:
    async with serve_process("maze") as (endpoint, _):
        async with GenericEnvClient(endpoint.base_url) as env:
            result = await env.reset(seed=21, size=7, episode_id="bfs")
            obs = result.observation
            path = shortest_path(obs["grid"], tuple(obs["agent"]), tuple(obs["exit"]))
            assert path
            for move in path:
                assert not result.done
                result = await env.step({"direction": move})
            assert result.done and result.reward == 1.0 and result.observation["agent"] == obs["exit"]
            state = await env.state()
            assert (state["episode_id"], state["step_count"], state["solved"]) == ("bfs", len(path), True)

        async with OEGenericEnvClient(base_url=endpoint.base_url) as oe:
            first = await oe.reset(seed=21, size=7)
            assert first.observation == obs and first.reward == 0.0 and first.done is False
            r = await oe.step({"action_id": 0})
            assert r.observation["blocked"] is True and r.reward == 0.0 and r.done is False
            r = await oe.step({"direction": path[0]})
            assert r.observation["agent"] != obs["agent"]
            assert (await oe.state())["step_count"] == 2
