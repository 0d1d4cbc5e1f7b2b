"""The OpenSpiel-compatible games over the wire: real ``openenv-train serve`` processes driven by our client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerError
from tests.conftest import serve_process

Obs = dict[str, Any]


def _catch_policy(obs: Obs) -> int:
    cells = [i for i, v in enumerate(obs["info_state"]) if v == 1.0]
    paddle = max(cells) % 5
    ball = min(cells) % 5
    return 1 if ball == paddle else (0 if ball < paddle else 2)


def _blackjack_policy(obs: Obs) -> int:
    total = int(sum(obs["info_state"][3:33])) - 1  # the thermometer of the best total
    return 0 if total < 17 else 1


def _scripted(moves: list[int]) -> Callable[[Obs], int]:
    queue = list(moves)
    return lambda obs: queue.pop(0)


# name -> (reset options, policy, what the final reward must be)
SCRIPTS: dict[str, tuple[dict[str, Any], Callable[[], Callable[[Obs], int]], set[float]]] = {
    "tic_tac_toe": ({"opponent": "first"}, lambda: _scripted([0, 2, 4, 7, 8]), {1.0}),
    "connect4": ({"opponent": "first"}, lambda: _scripted([6, 6, 6, 6]), {1.0}),
    "catch": ({}, lambda: _catch_policy, {1.0}),
    "blackjack": ({}, lambda: _blackjack_policy, {-1.0, 0.0, 1.0}),
    "2048": ({"max_tile": 32}, lambda: (lambda obs: obs["legal_actions"][0]), set()),
    "kuhn_poker": ({"opponent": "last"}, lambda: (lambda obs: 1), {-2.0, 2.0}),
}


@pytest.mark.parametrize("name", list(SCRIPTS))
async def test_each_game_plays_to_the_end_through_a_real_server(name: str) -> None:
    options, make_policy, finals = SCRIPTS[name]
    policy = make_policy()
    async with serve_process(name) as (endpoint, _):
        async with GenericEnvClient(endpoint.base_url, uds=endpoint.uds) as env:
            result = await env.reset(seed=11, **options)
            assert result.observation["game_phase"] == "initial" and result.reward == 0.0
            steps, total = 0, 0.0
            while not result.done:
                result = await env.step({"action_id": policy(result.observation)})
                assert result.observation["illegal_action"] is False
                steps += 1
                total += result.reward or 0.0
            assert result.observation["game_phase"] == "terminal" and result.observation["legal_actions"] == []
            assert result.observation["current_player_id"] == -4
            if finals:
                assert result.reward in finals
            else:  # 2048 pays merge points: some merging must happen before a 32 tile
                assert total >= 32
            state = await env.state()
            assert state["step_count"] == steps and state["illegal_action_count"] == 0


async def test_bad_actions_and_options_over_the_wire() -> None:
    async with serve_process("connect4") as (endpoint, _):
        async with GenericEnvClient(endpoint.base_url, uds=endpoint.uds) as env:
            first = await env.reset(seed=2)
            for bad in ({"action_id": "3"}, {"action_id": 2.5}, {"column": 3}):
                with pytest.raises(ServerError) as info:
                    await env.step(bad)
                assert info.value.code == "VALIDATION_ERROR"
            for options in ({"opponent": "minimax"}, {"rows": 0}, {"agent_player": 3}):
                with pytest.raises(ServerError) as info:
                    await env.reset(**options)
                assert info.value.code == "VALIDATION_ERROR"
            assert (await env.state())["step_count"] == 0  # rejected frames never reached the game
            rejected = await env.step({"action_id": 7})
            assert rejected.done is False and rejected.observation["illegal_action"] is True
            assert "out of range: connect_four action ids are 0..6" in rejected.observation["message"]
            assert rejected.observation["info_state"] == first.observation["info_state"]
            ok = await env.step({"action_id": 3})
            assert ok.observation["illegal_action"] is False and ok.observation["game_phase"] == "playing"
