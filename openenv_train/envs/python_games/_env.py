"""OpenSpielEnvironment: the episode loop shared by every OpenSpiel-compatible game here."""

from __future__ import annotations

import random
import uuid
from importlib.resources import files
from typing import ClassVar, Generic, TypeVar, cast

from ...server import Environment, TaskSplit, seed_splits
from ._game import CHANCE_PLAYER, GameState
from ._models import GamePhase, OpenSpielAction, OpenSpielObservation, OpenSpielState
from ._opponents import OPPONENTS, OpponentName, opponent_action

__all__ = ["OpenSpielEnvironment", "load_readme"]

GameT = TypeVar("GameT", bound=GameState)


def load_readme(game_doc: str) -> str:
    """A game's README: its own page followed by the package README shared by all games."""
    package = files(__package__)
    return package.joinpath(game_doc).read_text(encoding="utf-8") + "\n" + package.joinpath("README.md").read_text(
        encoding="utf-8"
    )


class OpenSpielEnvironment(Environment[OpenSpielAction, OpenSpielObservation, OpenSpielState], Generic[GameT]):
    """Plays one OpenSpiel game as the agent's player; chance and opponents move automatically.

    Subclasses set ``game_type`` and redefine ``reset`` with the game's typed options
    (the server validates reset options against that signature), delegating to
    :meth:`_start`. A step with an action that is not in ``legal_actions`` leaves
    the game untouched and answers an observation with ``illegal_action=True``, a
    ``message`` naming the legal ids, reward ``illegal_action_reward`` (0.0 by
    default), and ``done`` unchanged; it still counts in ``step_count`` (and in
    ``illegal_action_count``).
    """

    action_type = OpenSpielAction
    observation_type = OpenSpielObservation
    state_type = OpenSpielState
    game_type: ClassVar[type[GameState]]

    def __init__(self) -> None:
        # ``step`` before ``reset`` is allowed by the protocol: start an unseeded default game.
        self.reset()

    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              opponent: OpponentName = "random", agent_player: int = 0,
              illegal_action_reward: float = 0.0) -> OpenSpielObservation:
        """Start an episode of the game with default parameters (subclasses add the game's own options)."""
        return self._start(cast(GameT, self.game_type()), seed=seed, episode_id=episode_id, opponent=opponent,
                           agent_player=agent_player, illegal_action_reward=illegal_action_reward)

    def _start(self, game: GameT, *, seed: int | None, episode_id: str | None, opponent: str,
               agent_player: int, illegal_action_reward: float) -> OpenSpielObservation:
        """Begin an episode of ``game`` and play chance and opponents up to the agent's first turn.

        Raises:
            ValueError: ``opponent`` or ``agent_player`` is not one this game accepts.
        """
        if opponent not in OPPONENTS:
            raise ValueError(f"opponent={opponent!r} is not a policy; use one of {', '.join(OPPONENTS)}")
        if not 0 <= agent_player < game.num_players:
            raise ValueError(
                f"agent_player={agent_player} is not a player of {game.game_name}; "
                f"use 0..{game.num_players - 1}"
            )
        root = seed if seed is not None else random.SystemRandom().getrandbits(63)
        # Separate streams, so the opponent policy does not change which cards or tiles chance deals.
        self._chance_rng = random.Random(f"{root}/chance")
        self._opponent_rng = random.Random(f"{root}/opponent")
        self._game = game
        self._agent = agent_player
        self._opponent = opponent
        self._illegal_reward = float(illegal_action_reward)
        self._agent_moved = False
        self._last_opponent_action: int | None = None
        self._state = OpenSpielState(
            episode_id=episode_id or uuid.uuid4().hex,
            game_name=game.game_name,
            agent_player=agent_player,
            opponent_policy=opponent if game.num_players > 1 else "none",
            game_params=game.params,
            num_players=game.num_players,
        )
        self._advance()
        return self._observe(0.0)

    def step(self, action: OpenSpielAction) -> OpenSpielObservation:
        self._state.step_count += 1
        game, action_id = self._game, action.action_id
        if game.is_terminal():
            return self._reject(f"the episode is over, so action_id {action_id} was ignored; call reset to play again")
        legal = game.legal_actions(self._agent)
        if action_id not in legal:
            return self._reject(self._illegal_message(action_id, legal))
        game.apply_action(action_id)
        self._agent_moved = True
        self._advance()
        return self._observe(game.rewards()[self._agent])

    def task_splits(self) -> list[TaskSplit]:
        """A seed range per split (``server.SEED_SPLITS``): ``train`` below 1,000,000, ``test`` from there."""
        return seed_splits()

    @property
    def state(self) -> OpenSpielState:
        return self._state

    @property
    def game(self) -> GameT:
        """The game in progress (its ``history`` replays in pyspiel)."""
        return self._game

    def _advance(self) -> None:
        """Play chance outcomes and opponent moves until the agent is to move or the game ends."""
        game = self._game
        while not game.is_terminal():
            player = game.current_player()
            if player == self._agent:
                return
            if player == CHANCE_PLAYER:
                game.apply_action(game.sample_chance(self._chance_rng))
            else:
                move = opponent_action(self._opponent, game, self._opponent_rng)
                self._last_opponent_action = move
                game.apply_action(move)

    def _observe(self, reward: float, *, illegal: bool = False, message: str = "") -> OpenSpielObservation:
        game, agent = self._game, self._agent
        done = game.is_terminal()
        phase: GamePhase = "terminal" if done else "playing" if self._agent_moved else "initial"
        return OpenSpielObservation(
            info_state=game.info_state(agent),
            legal_actions=game.legal_actions(agent),
            game_phase=phase,
            current_player_id=game.current_player(),
            opponent_last_action=self._last_opponent_action,
            info_string=game.info_string(agent),
            illegal_action=illegal,
            message=message,
            done=done,
            reward=reward,
        )

    def _reject(self, message: str) -> OpenSpielObservation:
        self._state.illegal_action_count += 1
        return self._observe(self._illegal_reward, illegal=True, message=message)

    def _illegal_message(self, action_id: int, legal: list[int]) -> str:
        game = self._game
        n = game.num_distinct_actions
        if not 0 <= action_id < n:
            reason = f"action_id {action_id} is out of range: {game.game_name} action ids are 0..{n - 1}"
        else:
            name = game.action_to_string(self._agent, action_id)
            reason = f"action_id {action_id} ({name}) is illegal: {game.illegal_reason(action_id)}"
        names = ", ".join(f"{a}={game.action_to_string(self._agent, a)}" for a in legal)
        return f"{reason}. Legal action ids: {legal} ({names})."
