"""ChessEnvironment: the agent plays one side against a random or shallow-search opponent."""

from __future__ import annotations

import random
import uuid
from importlib import resources
from typing import Annotated, Any

import chess
from pydantic import Field, validate_call

from ...server import Environment
from ._models import ChessAction, ChessObservation, ChessState, Color
from ._moves import legal_uci, parse_move
from ._opponents import OpponentKind, choose_move
from ._view import board_html

__all__ = ["ChessEnvironment"]


class ChessEnvironment(Environment[ChessAction, ChessObservation, ChessState]):
    """Chess against a seeded opponent: +1 for a win, -1 for a loss, 0 for a draw, at the end.

    The agent sends one move per step (UCI or SAN); the opponent (``random`` or a
    1-3 ply alpha-beta ``search`` over material, ties broken by the seed) replies at once.
    A move that cannot be read or is illegal is answered with an ``error`` listing legal
    moves and leaves the position as it was. Draws by threefold repetition and the
    fifty-move rule are applied at once. After ``max_moves`` agent moves the game is truncated.

    Example:
        >>> env = ChessEnvironment()
        >>> obs = env.reset(seed=0, fen="6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
        >>> obs = env.step(ChessAction(move="Ra8"))
        >>> obs.result, obs.termination, obs.reward, obs.done
        ('1-0', 'checkmate', 1.0, True)
    """

    name = "chess"
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")
    action_type = ChessAction
    observation_type = ChessObservation
    state_type = ChessState
    # The search opponent takes milliseconds per reply (more at depth 3): keep it off the event loop.
    blocking = True

    @staticmethod
    def render_observation(observation: dict[str, Any]) -> str | None:
        """The board from the observation's FEN, the last two moves' squares highlighted."""
        return board_html(observation)

    def __init__(self) -> None:
        self._board = chess.Board()
        self._rng = random.Random()
        self._state = ChessState()
        self.reset()

    @validate_call
    def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
              opponent: OpponentKind = "random",
              agent_color: Color = "white",
              fen: str | None = None,
              max_moves: Annotated[int, Field(ge=1, le=10_000)] = 100,
              search_depth: Annotated[int, Field(ge=1, le=3)] = 2) -> ChessObservation:
        """Start a game; when the opponent is to move first, it moves before this returns.

        Args:
            seed: Seeds the opponent's choices.
            episode_id: Id of the episode; a random one when omitted.
            opponent: ``"random"`` or ``"search"``.
            agent_color: The side the agent plays.
            fen: Start position (validated); the standard one when omitted.
            max_moves: Agent moves before the game is truncated.
            search_depth: Plies the search opponent looks ahead (1-3).

        Raises:
            ValueError: ``fen`` is malformed, not a legal position, or already finished.
        """
        board = chess.Board(fen) if fen is not None else chess.Board()  # raises ValueError on a malformed FEN
        if not board.is_valid():
            raise ValueError(f"fen {fen!r} is not a legal position ({board.status()!r}); give a reachable one")
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            raise ValueError(f"fen {fen!r} is already finished ({outcome.termination.name.lower()}); "
                             "give a position with moves left")
        self._board, self._rng = board, random.Random(seed)
        self._state = ChessState(
            episode_id=episode_id or uuid.uuid4().hex, fen=board.fen(), start_fen=board.fen(),
            agent_color=agent_color, opponent=opponent, search_depth=search_depth, max_moves=max_moves,
        )
        reward = 0.0
        if self._opponent_to_move():
            self._opponent_moves()
            reward = self._settle()
        return self._observe(reward)

    def step(self, action: ChessAction) -> ChessObservation:
        state = self._state
        if state.done:
            return self._observe(0.0, error=f"the game is over ({state.result}, {state.termination}); "
                                            "call reset to start a new one")
        state.step_count += 1
        try:
            move = parse_move(self._board, action.move)
        except ValueError as exc:
            state.invalid_moves += 1
            return self._observe(0.0, error=str(exc))
        self._push(move)
        state.moves_played += 1
        state.last_move = move.uci()
        reward = self._settle()
        if not state.done and self._opponent_to_move():
            self._opponent_moves()
            reward = self._settle()
        return self._observe(reward)

    @property
    def state(self) -> ChessState:
        return self._state

    def _agent_turn(self) -> chess.Color:
        return chess.WHITE if self._state.agent_color == "white" else chess.BLACK

    def _opponent_to_move(self) -> bool:
        return self._board.turn != self._agent_turn()

    def _opponent_moves(self) -> None:
        state = self._state
        move = choose_move(state.opponent, self._board, self._rng, state.search_depth)
        self._push(move)
        state.opponent_last_move = move.uci()

    def _push(self, move: chess.Move) -> None:
        self._board.push(move)
        self._state.moves.append(move.uci())
        self._state.fen = self._board.fen()

    def _settle(self) -> float:
        """End the game if it is over or out of moves; returns the agent's reward for it."""
        state = self._state
        outcome = self._board.outcome(claim_draw=True)
        if outcome is not None:
            state.done, state.result = True, outcome.result()
            state.termination = outcome.termination.name.lower()
            if outcome.winner is None:
                return 0.0
            return 1.0 if outcome.winner == self._agent_turn() else -1.0
        if state.moves_played >= state.max_moves and not self._opponent_to_move():
            state.done = state.truncated = True
            state.termination = "max_moves"
        return 0.0

    def _observe(self, reward: float, **extra: Any) -> ChessObservation:
        state, board = self._state, self._board
        return ChessObservation(
            fen=board.fen(), board=str(board), legal_moves=[] if state.done else legal_uci(board),
            last_move=state.last_move, opponent_last_move=state.opponent_last_move,
            turn="white" if board.turn == chess.WHITE else "black", agent_color=state.agent_color,
            result=state.result, termination=state.termination, check=board.is_check(),
            truncated=state.truncated, done=state.done, reward=reward, **extra,
        )
