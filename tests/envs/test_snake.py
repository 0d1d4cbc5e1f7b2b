"""The snake env: movement, growth, collisions, rewards, seeding, invalid actions, real-server play."""

from __future__ import annotations

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerError
from openenv_train.envs.gridworlds import Cell, SnakeAction, SnakeEnvironment
from tests.conftest import serve_inloop, serve_process

DELTAS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


def greedy(obs: dict) -> str:
    """Head for the food along a move that does not die at once; any move when none is safe."""
    size = len(obs["grid"])
    head, body, food = obs["agent"], obs["body"], obs["food"] or obs["agent"]
    unsafe = {tuple(p) for p in body[:-1]}

    def safe(d: str) -> bool:
        r, c = head[0] + DELTAS[d][0], head[1] + DELTAS[d][1]
        return 0 <= r < size and 0 <= c < size and (r, c) not in unsafe

    def distance(d: str) -> int:
        return abs(head[0] + DELTAS[d][0] - food[0]) + abs(head[1] + DELTAS[d][1] - food[1])

    options = [d for d in DELTAS if safe(d)] or list(DELTAS)
    return min(options, key=distance)


def place_food(env: SnakeEnvironment, r: int, c: int) -> None:
    env.state.food = [r, c]  # white box: put the food where the rule under test needs it


# -- movement ------------------------------------------------------------------------------------
def test_start_position_and_rendering() -> None:
    obs = SnakeEnvironment().reset(seed=1, size=6)
    assert obs.body == [[3, 3], [3, 2], [3, 1]] and obs.agent == [3, 3] and obs.heading == "right"
    assert obs.length == 3 and obs.score == 0 and not obs.dead and obs.food not in obs.body
    assert obs.grid[3][3] == Cell.AGENT and obs.grid[3][2] == obs.grid[3][1] == Cell.BODY
    assert obs.food is not None and obs.grid[obs.food[0]][obs.food[1]] == Cell.FOOD
    assert obs.text.count("@") == 1 and obs.text.count("o") == 2 and obs.text.count("*") == 1


def test_moves_turns_keep_heading_and_ignored_reversals() -> None:
    env = SnakeEnvironment()
    env.reset(seed=0, size=10)
    place_food(env, 0, 9)
    obs = env.step(SnakeAction(direction="up"))
    assert obs.body == [[4, 5], [5, 5], [5, 4]] and obs.heading == "up" and obs.reward == 0.0 and obs.note is None
    obs = env.step(SnakeAction())  # no direction: keep going up
    assert obs.agent == [3, 5] and obs.length == 3
    obs = env.step(SnakeAction(action_id=2))  # down is straight back: ignored
    assert obs.agent == [2, 5] and obs.heading == "up" and obs.note and "straight back" in obs.note
    assert not obs.done and env.state.step_count == 3


# -- growth, collisions, rewards -----------------------------------------------------------------
def test_eating_grows_the_snake_pays_one_and_places_new_food_off_the_snake() -> None:
    env = SnakeEnvironment()
    env.reset(seed=5, size=8)
    place_food(env, 4, 5)
    obs = env.step(SnakeAction(direction="right"))
    assert obs.reward == 1.0 and obs.score == 1 and obs.length == 4
    assert obs.body == [[4, 5], [4, 4], [4, 3], [4, 2]] and obs.food is not None and obs.food not in obs.body
    obs = env.step(SnakeAction(direction="down"))
    assert obs.length == 4 and obs.reward == 0.0  # no food: the tail follows


def test_running_off_the_board_kills_and_pays_minus_one() -> None:
    env = SnakeEnvironment()
    env.reset(seed=2, size=4)
    place_food(env, 0, 0)
    assert env.step(SnakeAction()).reward == 0.0  # head (2,2) -> (2,3), the last column
    before = env.state.body[:]
    obs = env.step(SnakeAction())
    assert obs.done and obs.dead and obs.cause == "wall" and obs.reward == -1.0
    assert obs.body == before and not obs.truncated
    frozen = env.state.model_copy(deep=True)
    again = env.step(SnakeAction(direction="up"))
    assert again.done and again.reward == 0.0 and again.error and env.state == frozen


def test_running_into_the_body_kills_but_the_leaving_tail_cell_is_free() -> None:
    env = SnakeEnvironment()
    env.reset(seed=0, size=6)
    place_food(env, 5, 5)
    env.state.body = [[2, 2], [2, 1], [1, 1], [1, 2]]  # a 2x2 loop; (1, 2) is the tail
    obs = env.step(SnakeAction(direction="up"))
    assert not obs.done and obs.agent == [1, 2] and obs.length == 4  # chased its own tail
    env.state.body = [[2, 2], [2, 1], [1, 1], [1, 2], [1, 3]]
    env.state.heading = "right"
    obs = env.step(SnakeAction(direction="up"))
    assert obs.done and obs.dead and obs.cause == "self" and obs.reward == -1.0


def test_filling_the_board_ends_the_episode() -> None:
    env = SnakeEnvironment()
    env.reset(seed=0, size=4)
    serpentine = [(0, c) for c in range(4)] + [(1, c) for c in (3, 2, 1, 0)] + [(2, c) for c in range(4)]
    serpentine += [(3, 3), (3, 2), (3, 1)]
    env.state.body = [list(p) for p in reversed(serpentine)]
    env.state.heading = "left"
    place_food(env, 3, 0)
    obs = env.step(SnakeAction(direction="left"))
    assert obs.done and obs.reward == 1.0 and obs.cause == "full" and obs.food is None and obs.length == 16
    assert not obs.dead


def test_truncation_after_max_steps() -> None:
    env = SnakeEnvironment()
    env.reset(seed=0, size=8, max_steps=2)
    place_food(env, 0, 0)
    results = [env.step(SnakeAction()) for _ in range(2)]
    assert [r.done for r in results] == [False, True] and results[-1].truncated and not results[-1].dead


# -- seeding -------------------------------------------------------------------------------------
def test_same_seed_same_food_and_episode() -> None:
    runs = []
    for _ in range(2):
        env = SnakeEnvironment()
        obs = env.reset(seed=99, size=8)
        steps = [obs]
        while not obs.done and len(steps) < 150:
            obs = env.step(SnakeAction(direction=greedy(obs.model_dump())))  # type: ignore[arg-type]
            steps.append(obs)
        runs.append(steps)
    assert runs[0] == runs[1] and max(o.score for o in runs[0]) >= 2
    assert len({tuple(SnakeEnvironment().reset(seed=s).food or ()) for s in range(10)}) > 1


# -- invalid actions -----------------------------------------------------------------------------
async def test_bad_actions_and_options_are_validation_errors_that_change_nothing() -> None:
    async with serve_inloop(SnakeEnvironment) as server:
        async with GenericEnvClient(server.url) as env:
            await env.reset(seed=4, episode_id="s")
            await env.step({"direction": "down"})
            before = await env.state()
            for bad in ({"direction": "forward"}, {"direction": None, "action_id": 9}, {"action_id": "up"},
                        {"direction": "down", "action_id": 0}, {"speed": 2}):
                with pytest.raises(ServerError) as caught:
                    await env.step(bad)
                assert caught.value.code == "VALIDATION_ERROR", bad
            assert await env.state() == before
            with pytest.raises(ServerError) as caught:
                await env.reset(size=3)
            assert caught.value.code == "VALIDATION_ERROR"
            assert await env.state() == before
    with pytest.raises(ValidationError):
        SnakeEnvironment().reset(max_steps=0)


# -- real server ---------------------------------------------------------------------------------
async def test_greedy_policy_plays_to_the_end_through_a_real_server_and_openenv_client_drives_it() -> None:
    async with serve_process("snake") as (endpoint, _):
        async with GenericEnvClient(endpoint.base_url) as env:
            result = await env.reset(seed=13, size=6, max_steps=300)
            eaten, steps = 0, 0
            while not result.done:
                result = await env.step({"direction": greedy(result.observation)})
                eaten += result.reward == 1.0
                steps += 1
            obs = result.observation
            assert eaten == obs["score"] >= 2 and obs["length"] == 3 + obs["score"]
            assert obs["dead"] or obs["truncated"] or obs["cause"] == "full"
            assert result.reward == (-1.0 if obs["dead"] else result.reward)
            assert (await env.state())["step_count"] == steps

        async with OEGenericEnvClient(base_url=endpoint.base_url) as oe:
            first = await oe.reset(seed=13, size=6)
            assert first.observation["agent"] == [3, 3] and first.done is False
            r = await oe.step({"action_id": 0})
            assert r.observation["agent"] == [2, 3] and r.observation["heading"] == "up"
            r = await oe.step({})
            assert r.observation["agent"] == [1, 3] and (await oe.state())["step_count"] == 2
