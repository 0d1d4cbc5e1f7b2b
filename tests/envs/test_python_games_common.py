"""Behaviour every OpenSpiel-compatible env shares: seeding, rejected actions, options, types, metadata."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from openenv_train.envs import load_env_class
from openenv_train.envs.python_games import OpenSpielAction, OpenSpielEnvironment

NAMES = ["tic_tac_toe", "connect4", "catch", "blackjack", "2048", "kuhn_poker"]
TWO_PLAYER = {"tic_tac_toe", "connect4", "kuhn_poker"}


def _env(name: str) -> OpenSpielEnvironment:
    env = load_env_class(name)()
    assert isinstance(env, OpenSpielEnvironment)
    return env


def _episode(name: str, seed: int, **options: Any) -> list[dict[str, Any]]:
    """A whole episode with a random agent drawn from ``seed``, as plain data."""
    env = _env(name)
    rng = random.Random(seed)
    obs = env.reset(seed=seed, episode_id="e", **options)
    trace = [obs.model_dump()]
    while not obs.done and len(trace) < 200:
        obs = env.step(OpenSpielAction(action_id=rng.choice(obs.legal_actions)))
        trace.append(obs.model_dump())
    return [*trace, env.state.model_dump(), {"history": env.game.history}]


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_episode_and_seeds_differ(name: str) -> None:
    assert _episode(name, 7) == _episode(name, 7)
    assert len({repr(_episode(name, seed)) for seed in range(6)}) > 1
    if name in TWO_PLAYER:
        assert _episode(name, 7, opponent="heuristic", agent_player=1) == _episode(name, 7, opponent="heuristic",
                                                                                    agent_player=1)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [-1, 99, 10**12])
def test_rejected_actions_change_nothing_but_the_counters(name: str, bad: int) -> None:
    env = _env(name)
    before = env.reset(seed=3)
    state, history = env.state.model_dump(), list(env.game.history)
    after = env.step(OpenSpielAction(action_id=bad))
    assert after.illegal_action and f"action_id {bad} is out of range" in after.message
    assert f"Legal action ids: {before.legal_actions}" in after.message
    same = {"illegal_action", "message"}
    assert after.model_dump(exclude=same) == before.model_dump(exclude=same) and after.done is False
    assert env.game.history == history
    assert env.state.model_dump() == {**state, "step_count": 1, "illegal_action_count": 1}
    # The rejected step consumed no randomness: the game goes on exactly as without it.
    move = OpenSpielAction(action_id=before.legal_actions[-1])
    twin = _env(name)
    twin.reset(seed=3)
    assert env.step(move) == twin.step(move)


@pytest.mark.parametrize("name", NAMES)
def test_the_illegal_action_reward_is_configurable(name: str) -> None:
    env = _env(name)
    env.reset(seed=0, illegal_action_reward=-0.25)
    assert env.step(OpenSpielAction(action_id=-5)).reward == -0.25


def test_the_action_must_be_an_integer_and_accepts_openenv_fields() -> None:
    adapter = TypeAdapter(OpenSpielAction)
    for bad in ({"action_id": "3"}, {"action_id": 1.5}, {"action_id": True}, {"action_id": None}, {"move": 1}):
        with pytest.raises(ValidationError):
            adapter.validate_python(bad)
    assert adapter.validate_python({}).action_id == 0
    openenv_style = adapter.validate_python({"action_id": 4, "game_name": "catch", "game_params": {"rows": 3}})
    assert openenv_style.action_id == 4


@pytest.mark.parametrize("name", NAMES)
def test_reset_options_are_validated(name: str) -> None:
    env_cls = load_env_class(name)
    model = env_cls.spec_info().reset_model
    assert model.model_validate({"opponent": "heuristic", "agent_player": 0}).opponent == "heuristic"  # type: ignore[attr-defined]
    for bad in ({"opponent": "minimax"}, {"agent_player": 2}, {"illegal_action_reward": "x"}, {"no_such": 1}):
        with pytest.raises(ValidationError):
            model.model_validate(bad)
    if name not in TWO_PLAYER:
        with pytest.raises(ValidationError):
            model.model_validate({"agent_player": 1})
    env = _env(name)
    with pytest.raises(ValueError, match="opponent='minimax' is not a policy"):
        env.reset(opponent="minimax")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="agent_player=5 is not a player"):
        env.reset(agent_player=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", NAMES)
def test_step_before_reset_plays_a_fresh_game(name: str) -> None:
    env = _env(name)
    obs = env.step(OpenSpielAction(action_id=env.game.legal_actions(0)[0]))
    assert obs.illegal_action is False and env.state.step_count == 1 and env.state.episode_id


@pytest.mark.parametrize("name", NAMES)
def test_metadata_state_and_readme(name: str) -> None:
    env_cls = load_env_class(name)
    meta = env_cls.metadata_info()
    assert meta.name == name and meta.description
    assert meta.readme_content and meta.readme_content.startswith(f"# {name}\n")
    assert "### Illegal actions" in meta.readme_content
    env = _env(name)
    obs = env.reset(seed=1, episode_id="abc")
    state = env.state
    assert (state.episode_id, state.step_count, state.illegal_action_count) == ("abc", 0, 0)
    assert state.num_players == (2 if name in TWO_PLAYER else 1)
    assert obs.game_phase == "initial" and obs.reward == 0.0 and obs.done is False
    assert obs.current_player_id == state.agent_player and obs.legal_actions and obs.info_string
