"""OpenEnv's own GenericEnvClient (openenv-core 0.3.0) drives the OpenSpiel-compatible games in real server processes."""

from __future__ import annotations

from openenv.core import GenericEnvClient as OEGenericEnvClient

from tests.conftest import serve_process


async def test_openenv_generic_client_drives_a_game_with_openspiel_action_payloads() -> None:
    async with serve_process("tic_tac_toe") as (endpoint, _):
        async with OEGenericEnvClient(base_url=endpoint.base_url) as env:
            first = await env.reset(seed=0, opponent="first", episode_id="oe")
            assert first.observation["legal_actions"] == list(range(9)) and first.done is False
            assert len(first.observation["info_state"]) == 27
            result = first
            # What OpenEnv's OpenSpielEnv client sends: action_id plus game_name/game_params (ignored here).
            for cell in (0, 2, 4, 7, 8):
                result = await env.step({"action_id": cell, "game_name": "catch", "game_params": {}})
            assert result.done is True and result.reward == 1.0
            assert result.observation["opponent_last_action"] == 6
            state = await env.state()
            assert state["episode_id"] == "oe" and state["step_count"] == 5
            assert state["game_name"] == "tic_tac_toe" and state["num_players"] == 2


async def test_openenv_generic_client_plays_kuhn_poker_as_the_second_player() -> None:
    async with serve_process("kuhn_poker") as (endpoint, _):
        async with OEGenericEnvClient(base_url=endpoint.base_url) as env:
            result = await env.reset(seed=5, opponent="last", agent_player=1)
            assert result.observation["opponent_last_action"] == 1 and result.observation["current_player_id"] == 1
            result = await env.step({"action_id": 0})  # fold to the bet
            assert result.done is True and result.reward == -1.0
