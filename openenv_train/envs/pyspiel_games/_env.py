"""SpielEnvironment: any pyspiel game as the agent's player; chance and opponents move automatically."""

from __future__ import annotations

import html
import random
import uuid
from importlib import resources
from typing import Annotated, Any, ClassVar

from pydantic import Field, validate_call

from ...server import Environment
from .._pyspiel_table import GAMES, SpielGame
from ..python_games import OpenSpielAction, OpenSpielState
from ._models import SpielObservation
from ._opponents import Opponent, SpielOpponent

__all__ = ["SpielEnvironment", "spiel_env"]

_README = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")


def _pyspiel() -> Any:
    try:
        import pyspiel
    except ImportError as exc:  # the catalog checks first; this covers direct imports of the class
        raise ImportError("the openspiel/<game> envs need open_spiel: pip install 'openenv-train[openspiel]'") from exc
    return pyspiel


class SpielEnvironment(Environment[OpenSpielAction, SpielObservation, OpenSpielState]):
    """One OpenSpiel game through the real ``pyspiel``, against a seeded random or MCTS opponent.

    The agent plays ``agent_player``; chance outcomes (dice, deals) are drawn from the
    seed and every other player moves by the opponent policy, so each observation is
    the agent's turn or the end. An action outside ``legal_actions`` leaves the game as
    it was and answers ``illegal_action=True`` with a message listing the legal moves.
    The reward of a step is the agent's pyspiel reward (returns at the end in most games).
    """

    action_type = OpenSpielAction
    observation_type = SpielObservation
    state_type = OpenSpielState
    spiel_game: ClassVar[SpielGame]
    # MCTS replies take tens of milliseconds: keep them off the event loop.
    blocking = True

    def __init__(self) -> None:
        self.reset()

    @validate_call
    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              opponent: SpielOpponent = "random", agent_player: Annotated[int, Field(ge=0)] = 0,
              mcts_simulations: Annotated[int, Field(ge=1, le=5000)] = 50,
              game_params: dict[str, Any] | None = None, illegal_action_reward: float = 0.0) -> SpielObservation:
        """Start a game; chance and opponents move until it is the agent's turn.

        Raises:
            ValueError: ``agent_player`` is not a player of the game, or pyspiel refuses ``game_params``.
        """
        pyspiel, spec = _pyspiel(), self.spiel_game
        params = {**spec.params, **(game_params or {})}
        try:
            load = pyspiel.load_game_as_turn_based if spec.turn_based else pyspiel.load_game
            game = load(spec.name, params)
        except pyspiel.SpielError as exc:
            raise ValueError(f"pyspiel refused {spec.name} with game_params={params}: {exc}") from None
        if agent_player >= game.num_players():
            raise ValueError(f"agent_player={agent_player} is not a player of {spec.name}; "
                             f"use 0..{game.num_players() - 1}")
        root = seed if seed is not None else random.SystemRandom().getrandbits(63)
        self._game, self._spiel_state = game, game.new_initial_state()
        self._agent, self._illegal_reward = agent_player, float(illegal_action_reward)
        self._chance_rng = random.Random(f"{root}/chance")
        self._opponent = Opponent(opponent, game, root, mcts_simulations)
        self._moved = False
        self._last_opponent_action: int | None = None
        gtype = game.get_type()
        self._perfect = gtype.information == pyspiel.GameType.Information.PERFECT_INFORMATION
        self._state = OpenSpielState(
            episode_id=episode_id or uuid.uuid4().hex, game_name=spec.name, agent_player=agent_player,
            opponent_policy=opponent, game_params=params, num_players=game.num_players(),
        )
        self._advance()
        return self._observe(0.0)

    def step(self, action: OpenSpielAction) -> SpielObservation:
        self._state.step_count += 1
        state, action_id = self._spiel_state, action.action_id
        if state.is_terminal():
            return self._reject(f"the game is over, so action_id {action_id} was ignored; call reset to play again")
        legal = state.legal_actions(self._agent)
        if action_id not in legal:
            return self._reject(self._illegal_message(action_id, legal))
        before = state.returns()[self._agent]
        state.apply_action(action_id)
        self._moved = True
        self._advance()
        return self._observe(state.returns()[self._agent] - before)

    @property
    def state(self) -> OpenSpielState:
        return self._state

    @property
    def game_state(self) -> Any:
        """The pyspiel state in play (its ``history()`` replays the game in pyspiel)."""
        return self._spiel_state

    @staticmethod
    def render_observation(observation: dict[str, Any]) -> str | None:
        """The text board as an escaped ``<pre>`` block (the playground's board view)."""
        board = observation.get("board")
        return f"<pre class=\"board\">{html.escape(board)}</pre>" if isinstance(board, str) and board else None

    def _advance(self) -> None:
        state = self._spiel_state
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(self._chance_rng.choices(outcomes, probs)[0])
            elif state.current_player() == self._agent:
                return
            else:
                move = self._opponent.action(state)
                self._last_opponent_action = move
                state.apply_action(move)

    def _views(self) -> tuple[list[float], str]:
        state, agent, gtype = self._spiel_state, self._agent, self._game.get_type()
        if not self._perfect and gtype.provides_information_state_tensor:
            tensor = state.information_state_tensor(agent)
        elif gtype.provides_observation_tensor:
            tensor = state.observation_tensor(agent)
        else:
            tensor = []
        if not self._perfect and gtype.provides_information_state_string:
            text = state.information_state_string(agent)
        elif gtype.provides_observation_string:
            text = state.observation_string(agent)
        else:
            text = str(state) if self._perfect else ""
        return [float(x) for x in tensor], text

    def _observe(self, reward: float, *, illegal: bool = False, message: str = "") -> SpielObservation:
        state, agent = self._spiel_state, self._agent
        done = state.is_terminal()
        legal = [] if done else state.legal_actions(agent)
        tensor, text = self._views()
        return SpielObservation(
            info_state=tensor, info_string=text, legal_actions=legal,
            legal_action_names=[state.action_to_string(agent, a) for a in legal],
            # str(state) shows hidden cards and ships in imperfect-information games: only the agent's view then.
            board=str(state) if self._perfect else text,
            game_phase="terminal" if done else "playing" if self._moved else "initial",
            current_player_id=state.current_player(), opponent_last_action=self._last_opponent_action,
            illegal_action=illegal, message=message, returns=list(state.returns()) if done else None,
            done=done, reward=reward,
        )

    def _reject(self, message: str) -> SpielObservation:
        self._state.illegal_action_count += 1
        return self._observe(self._illegal_reward, illegal=True, message=message)

    def _illegal_message(self, action_id: int, legal: list[int]) -> str:
        state, agent = self._spiel_state, self._agent
        names = ", ".join(f"{a}={state.action_to_string(agent, a)}" for a in legal[:60])
        more = f" and {len(legal) - 60} more" if len(legal) > 60 else ""
        return f"action_id {action_id} is not legal now. Legal action ids: {names}{more}."


def spiel_env(key: str, class_name: str, module: str) -> type[SpielEnvironment]:
    """The Environment class of catalog game ``openspiel/<key>``, to be bound as ``module.class_name``."""
    game = GAMES[key]
    params = ", ".join(f"{k}={v}" for k, v in game.params.items()) or "pyspiel's defaults"
    readme = f"# openspiel/{key}\n\n{game.blurb}\n\npyspiel game `{game.name}`, parameters: {params}.\n\n{_README}"
    doc = f"{game.blurb}\n\nOpenSpiel's ``{game.name}`` through pyspiel; see SpielEnvironment."
    cls = type(class_name, (SpielEnvironment,), {
        "__doc__": doc, "__module__": module, "__qualname__": class_name,
        "name": f"openspiel/{key}", "readme": readme, "spiel_game": game,
    })
    return cls
