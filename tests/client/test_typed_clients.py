"""Typed clients of every catalog env, as OpenEnv users write them: ``from openenv_train.envs.X import XEnv``."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import pytest

from openenv_train.client import TypedEnvClient, TypedMCPClient
from openenv_train.core import CallToolAction, CallToolObservation, ListToolsAction, ListToolsObservation, State
from openenv_train.envs import browser, list_envs, pyspiel_games, textarena_games
from openenv_train.envs.atari import AtariAction, AtariEnv
from openenv_train.envs.browser import BrowserAction, BrowserEnv
from openenv_train.envs.calendar_tools import CalendarEnv
from openenv_train.envs.chess import ChessAction, ChessEnv
from openenv_train.envs.coding import CodingAction, CodingEnv
from openenv_train.envs.counter import CounterAction, CounterEnv, CounterObservation, CounterState
from openenv_train.envs.doc_search import DocSearchEnv
from openenv_train.envs.echo import EchoEnv
from openenv_train.envs.git_repo import GitAction, GitEnv
from openenv_train.envs.gridworlds import GridWorldAction, GridWorldEnv, MazeAction, MazeEnv, SnakeAction, SnakeEnv
from openenv_train.envs.jupyter import JupyterAction, JupyterEnv
from openenv_train.envs.mock_apis import MockAPIEnv
from openenv_train.envs.mujoco_control import DMControlAction, DMControlEnv
from openenv_train.envs.python_games import (
    BlackjackEnv,
    CatchEnv,
    ConnectFourEnv,
    KuhnPokerEnv,
    OpenSpielAction,
    TicTacToeEnv,
    TwentyFortyEightEnv,
)
from openenv_train.envs.reasoning_gym import ReasoningGymAction, ReasoningGymEnv
from openenv_train.envs.repl import ReplAction, ReplEnv
from openenv_train.envs.sql_tools import SQLQuestionObservation, SQLToolsEnv, SQLToolsState
from openenv_train.envs.terminal import TerminalAction, TerminalEnv
from openenv_train.envs.textarena_games import TextArenaAction
from openenv_train.envs.trading import TradingAction, TradingEnv, TradingMCPEnv
from openenv_train.envs.traffic import SumoAction, SumoRLEnv
from openenv_train.envs.wordle import WordleAction, WordleEnv, WordleObservation, WordleState
from tests.conftest import serve_process


def _legal(obs: Any) -> OpenSpielAction:
    return OpenSpielAction(action_id=obs.legal_actions[0])


# client class -> the first action to send, made from the reset observation
FIRST_ACTION: dict[type[TypedEnvClient[Any, Any, Any]], Any] = {
    CounterEnv: lambda obs: CounterAction(delta=1),
    WordleEnv: lambda obs: WordleAction(message="[crane]"),
    ChessEnv: lambda obs: ChessAction(move="e2e4"),
    CodingEnv: lambda obs: CodingAction(code="x = 1"),
    ReplEnv: lambda obs: ReplAction(code="x = 1"),
    ReasoningGymEnv: lambda obs: ReasoningGymAction(answer="1"),
    MazeEnv: lambda obs: MazeAction(direction="down"),
    GridWorldEnv: lambda obs: GridWorldAction(direction="down"),
    SnakeEnv: lambda obs: SnakeAction(direction="up"),
    TicTacToeEnv: _legal, ConnectFourEnv: _legal, KuhnPokerEnv: _legal, CatchEnv: _legal, BlackjackEnv: _legal,
    TwentyFortyEightEnv: _legal,
    EchoEnv: lambda obs: CallToolAction(tool_name="echo_message", arguments={"message": "hi"}),
    SQLToolsEnv: lambda obs: ListToolsAction(),
    TradingEnv: lambda obs: TradingAction(target_position=0.5),
    TradingMCPEnv: lambda obs: ListToolsAction(), CalendarEnv: lambda obs: ListToolsAction(),
    MockAPIEnv: lambda obs: ListToolsAction(),
    BrowserEnv: lambda obs: BrowserAction(action_str="noop()"),
    GitEnv: lambda obs: GitAction(command="git status"),
    TerminalEnv: lambda obs: TerminalAction(keystrokes="ls\n"),
    JupyterEnv: lambda obs: JupyterAction(code="x = 1"),
    AtariEnv: lambda obs: AtariAction(action_id=1),
    DMControlEnv: lambda obs: DMControlAction(values=[0.5]),
    SumoRLEnv: lambda obs: SumoAction(phase_id=1),
    DocSearchEnv: lambda obs: CallToolAction(tool_name="search", arguments={"query": "square root"}),
    **{cls: _legal for cls in pyspiel_games.GAME_CLIENTS.values()},
    **{cls: (lambda obs: TextArenaAction(message="[1]")) for cls in textarena_games.GAME_CLIENTS.values()},
    **{browser.task_client(task): (lambda obs: BrowserAction(action_str="noop()")) for task in browser.SOLVABLE_TASKS},
}
#: Driven with their typed clients over the wire by their own tests (tests/envs/test_<kind>_env.py).
OWN_TESTS = (GitEnv, TerminalEnv, JupyterEnv, AtariEnv, DMControlEnv, SumoRLEnv, DocSearchEnv)
#: Served and stepped by the next test: every env that had a client before the catalog grew, and one of each new
#: family (each family's clients share one class above the per-game ones).
EXERCISED = [cls for cls in FIRST_ACTION if cls not in OWN_TESTS and not any(cls.__module__ == family.__name__
                                                  or cls.__module__.startswith(family.__name__ + ".")
                                                  for family in (pyspiel_games, textarena_games, browser))] + [
    pyspiel_games.GAME_CLIENTS["SpielNimEnv"], textarena_games.GAME_CLIENTS["TextArenaLightsOutEnv"],
    browser.task_client("click-button")]


def test_every_catalog_env_has_a_typed_client_in_its_package() -> None:
    declared = {cls.env_name: cls for cls in FIRST_ACTION}
    for spec in list_envs():
        assert spec.name in declared, f"catalog env {spec.name!r} has no typed client in FIRST_ACTION"
        cls = declared[spec.name]
        package = importlib.import_module(spec.entry_point.partition(":")[0])
        assert getattr(package, cls.__name__) is cls, f"{package.__name__} does not export {cls.__name__}"
        if any(importlib.util.find_spec(m) is None for m in spec.modules):
            continue  # its extra is not installed here: the client and types above import without it
        env_cls = spec.load()
        if not issubclass(cls, TypedMCPClient):  # MCP clients parse tool observations themselves
            assert (cls.action_type, cls.observation_type, cls.state_type) == (
                env_cls.action_type, env_cls.observation_type, env_cls.state_type)


@pytest.mark.parametrize("cls", EXERCISED, ids=lambda c: c.__name__)
async def test_typed_client_gives_the_env_types(cls: type[TypedEnvClient[Any, Any, Any]]) -> None:
    async with await cls.from_env(provider="inprocess") as env:
        first = await env.reset(seed=3)
        if cls.observation_type is not None:
            assert isinstance(first.observation, cls.observation_type)
        result = await env.step(FIRST_ACTION[cls](first.observation))
        assert type(result.observation).__name__.endswith("Observation")
        if cls.observation_type is not None and not issubclass(cls, TypedMCPClient):
            assert isinstance(result.observation, cls.observation_type)
        state = await env.state()
        assert isinstance(state, cls.state_type) and state.step_count == 1


async def test_echo_quick_start_as_openenv_writes_it() -> None:
    async with serve_process("echo") as (endpoint, _provider):
        async with EchoEnv(base_url=endpoint.base_url) as env:
            await env.reset()
            res = await env.step(CallToolAction(tool_name="echo_message", arguments={"message": "Hello"}))
            assert isinstance(res.observation, CallToolObservation)
            assert res.observation.result["data"] == "Hello"
            assert await env.call_tool("echo_with_length", message="abc") == {"message": "abc", "length": 3}
            tools = (await env.step(ListToolsAction())).observation
            assert isinstance(tools, ListToolsObservation) and {t.name for t in tools.tools} >= {"echo_message"}
            assert isinstance(await env.state(), State)
        with EchoEnv(base_url=endpoint.base_url).sync() as env:
            env.reset()
            assert env.step(CallToolAction(tool_name="echo_message", arguments={"message": "x"})).observation.result[
                "data"] == "x"
            assert [t.name for t in env.list_tools()] == ["echo_message", "echo_with_length"]


async def test_sync_typed_clients_against_served_envs() -> None:
    async with serve_process("wordle") as (endpoint, _provider):
        with WordleEnv(base_url=endpoint.base_url).sync() as env:
            obs = env.reset(seed=1).observation
            assert isinstance(obs, WordleObservation)
            result = env.step(WordleAction(message="[crane]"))
            assert isinstance(result.observation, WordleObservation) and result.observation.remaining_guesses == 5
            assert isinstance(env.state(), WordleState)
    async with serve_process("sql_tools") as (endpoint, _provider):
        with SQLToolsEnv(base_url=endpoint.base_url).sync() as sql:
            question = sql.reset(seed=0).observation
            assert isinstance(question, SQLQuestionObservation) and question.question
            assert "query" in {t.name for t in sql.list_tools()}
            assert isinstance(sql.state(), SQLToolsState)


def test_declared_types_and_overrides() -> None:
    class Mine(TypedEnvClient[CounterAction, CounterObservation, CounterState]):
        state_type = State

    assert (Mine.action_type, Mine.observation_type, Mine.state_type, Mine.env_name) == (
        CounterAction, CounterObservation, State, None)
    assert CounterEnv.env_name == "counter" and TicTacToeEnv.env_name == "tic_tac_toe"


async def test_from_env_without_a_name_says_how_to_give_one() -> None:
    class Nameless(TypedEnvClient[CounterAction, CounterObservation, CounterState]):
        pass

    with pytest.raises(ValueError, match="names no env"):
        await Nameless.from_env()
