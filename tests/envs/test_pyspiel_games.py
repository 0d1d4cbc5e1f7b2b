"""openspiel/<game> through the real pyspiel: seeded games, MCTS opponents, hidden information, a missing extra."""

from __future__ import annotations

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient

from openenv_train.core import EnvLoadError
from openenv_train.envs import EnvSpec, load_env_class
from openenv_train.envs.python_games import OpenSpielAction
from tests.conftest import serve_inloop

pyspiel = pytest.importorskip("pyspiel")


def _play(name: str, seed: int, **options: object) -> list[dict[str, object]]:
    env = load_env_class(name)()
    obs = env.reset(seed=seed, **options)
    trail = [obs.model_dump()]
    while not obs.done:
        obs = env.step(OpenSpielAction(action_id=obs.legal_actions[len(obs.legal_actions) // 2]))
        trail.append(obs.model_dump())
    return trail


def test_same_seed_same_game_with_dice_and_an_mcts_opponent() -> None:
    first = _play("openspiel/backgammon", 3)
    assert first == _play("openspiel/backgammon", 3) and first != _play("openspiel/backgammon", 4)
    mcts = _play("openspiel/hex", 1, opponent="mcts", mcts_simulations=20)
    assert mcts == _play("openspiel/hex", 1, opponent="mcts", mcts_simulations=20)
    assert mcts[-1]["returns"] in ([1.0, -1.0], [-1.0, 1.0]) and mcts[-1]["reward"] == mcts[-1]["returns"][0]


def test_the_observation_replays_in_pyspiel() -> None:
    env = load_env_class("openspiel/othello")()
    obs = env.reset(seed=0, agent_player=1)
    obs = env.step(OpenSpielAction(action_id=obs.legal_actions[0]))
    state = pyspiel.load_game("othello").new_initial_state()
    for action in env.game_state.history():
        state.apply_action(action)
    assert obs.board == str(state) and obs.info_state == list(state.observation_tensor(1))
    assert obs.legal_action_names == [state.action_to_string(1, a) for a in state.legal_actions()]


def test_hidden_information_stays_hidden() -> None:
    env = load_env_class("openspiel/liars_dice")()
    obs = env.reset(seed=2)
    dice = str(env.game_state).split()  # pyspiel's full string: both players' dice
    assert obs.board == obs.info_string == dice[0] != str(env.game_state)
    assert obs.info_state == list(env.game_state.information_state_tensor(0))


def test_illegal_moves_and_bad_options_are_named() -> None:
    env = load_env_class("openspiel/nim")()
    obs = env.reset(seed=0)
    rejected = env.step(OpenSpielAction(action_id=10_000))
    assert rejected.illegal_action and "not legal" in rejected.message and rejected.board == obs.board
    assert env.state.illegal_action_count == 1
    with pytest.raises(ValueError, match="agent_player=5"):
        env.reset(agent_player=5)
    with pytest.raises(ValueError, match="pyspiel refused"):
        env.reset(game_params={"no_such_param": 1})


def test_a_missing_extra_names_its_install_line() -> None:
    spec = EnvSpec("openspiel/fake", "openenv_train.envs.pyspiel_games:SpielNimEnvironment", "x",
                   extra="openspiel", modules=("no_such_module_here",))
    with pytest.raises(EnvLoadError, match=r"pip install 'openenv-train\[openspiel\]'"):
        spec.load()


async def test_openenv_client_plays_a_game_to_the_end() -> None:
    async with serve_inloop(load_env_class("openspiel/dots_and_boxes")) as server:
        async with OEGenericEnvClient(base_url=server.url) as client:
            result = await client.reset(seed=9, opponent="mcts", mcts_simulations=10)
            steps = 0
            while not result.done:
                result = await client.step({"action_id": result.observation["legal_actions"][0], "game_name": "x"})
                steps += 1
            assert result.observation["game_phase"] == "terminal" and len(result.observation["returns"]) == 2
            assert (await client.state())["step_count"] == steps
