"""Wordle served by a real ``openenv-train serve wordle`` process, driven by our client and OpenEnv's."""

from __future__ import annotations

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient

from openenv_train.client import GenericEnvClient
from openenv_train.core import ServerError
from openenv_train.envs.wordle import WordleEnvironment, WordleSolver
from tests.conftest import serve_inloop, serve_process

SOLVER = WordleSolver()


async def test_solver_plays_to_a_win_through_a_real_server_process() -> None:
    async with serve_process("wordle") as (endpoint, _provider):
        async with GenericEnvClient(endpoint.base_url, uds=endpoint.uds) as env:
            result = await env.reset(seed=7, episode_id="wire")
            assert result.observation["prompt"].startswith("[GAME] You are Playing Wordle.")
            steps = 0
            while not result.done:
                result = await env.step(SOLVER.act(result.observation))
                steps += 1
            assert result.reward == 1.0 and result.observation["feedback"][-1] == "GGGGG"
            assert result.observation["info"]["reward_signals"]["wordle.correct"] == 1.0
            state = await env.state()
            assert state["episode_id"] == "wire" and state["step_count"] == steps and state["won"] is True


async def test_openenv_generic_client_drives_wordle() -> None:
    async with serve_process("wordle") as (endpoint, _provider):
        async with OEGenericEnvClient(base_url=endpoint.base_url) as env:
            result = await env.reset(seed=3)
            obs = result.observation
            assert (result.reward, result.done) == (0.0, False)
            assert set(obs) >= {"prompt", "messages", "current_player_id", "legal_players", "info"}
            assert obs["messages"][0]["sender_id"] == -1 and obs["messages"][0]["category"] == "MESSAGE"
            result = await env.step({"message": "[zzzzz]"})  # a warning, not a lost guess
            assert result.observation["invalid_move"] and result.done is False
            while not result.done:
                result = await env.step(SOLVER.act(result.observation))
            assert result.reward == 1.0
            signals = result.observation["info"]["reward_signals"]
            assert set(signals) == {"wordle.greens", "wordle.yellows", "wordle.repetitions", "wordle.correct"}
            state = await env.state()
            assert state["done"] is True and state["step_count"] == 1 + len(result.observation["guesses"])


async def test_rejected_actions_and_bad_reset_options_leave_the_episode_alone() -> None:
    async with serve_inloop(WordleEnvironment) as server:
        async with GenericEnvClient(server.url) as env:
            await env.reset(task="crane", episode_id="keep")
            await env.step({"message": "[slate]"})
            before = await env.state()
            for bad in ({"message": 5}, {"guess": "crane"}, {"message": None}):
                with pytest.raises(ServerError) as info:
                    await env.step(bad)
                assert info.value.code == "VALIDATION_ERROR"
            for options in ({"task": "zzzzz"}, {"secret": "cranes"}, {"max_guesses": 0}, {"word": 12345}):
                with pytest.raises(ServerError) as info:
                    await env.reset(**options)
                assert info.value.code == "VALIDATION_ERROR", options
            error = await _reset_error(env, task="qqqqq")
            assert "not a valid secret" in error.details["errors"][0]["msg"]
            assert await env.state() == before
            result = await env.step({"message": "[crane]"})
            assert result.reward == 1.0 and result.observation["guesses"] == ["slate", "crane"]


async def _reset_error(env: GenericEnvClient, **options: object) -> ServerError:
    try:
        await env.reset(**options)
    except ServerError as exc:
        return exc
    raise AssertionError("reset was accepted")
