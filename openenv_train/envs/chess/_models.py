"""Typed action, observation and state of the chess environment."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...core import Action, Observation, State
from ._opponents import OpponentKind

__all__ = ["ChessAction", "ChessObservation", "ChessState", "Color"]

Color = Literal["white", "black"]
START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


class ChessAction(Action):
    """One move for the agent, in UCI (``e2e4``, ``e7e8q``) or SAN (``Nf3``, ``O-O``, ``exd5``)."""

    move: str = Field(default="", max_length=16, description='The move: UCI such as "e2e4" or SAN such as "Nf3".')


class ChessObservation(Observation):
    """The position after the agent's move and the opponent's reply."""

    fen: str = Field(default=START_FEN, description="The position in FEN.")
    board: str = Field(default="", description="The board as ASCII, white at the bottom, upper case white.")
    legal_moves: list[str] = Field(default_factory=list, description="The agent's legal moves in UCI, sorted.")
    last_move: str | None = Field(default=None, description="The agent's last move in UCI.")
    opponent_last_move: str | None = Field(default=None, description="The opponent's last move in UCI.")
    turn: Color = Field(default="white", description="The side to move.")
    agent_color: Color = Field(default="white", description="The side the agent plays.")
    result: str = Field(default="*", description='"1-0", "0-1", "1/2-1/2", or "*" while running or when truncated.')
    termination: str | None = Field(
        default=None, description='Why the game ended: "checkmate", "stalemate", ..., or "max_moves".'
    )
    check: bool = Field(default=False, description="The side to move is in check.")
    error: str | None = Field(default=None, description="Why the agent's move was rejected, or null.")
    truncated: bool = Field(default=False, description="The game was cut off after max_moves agent moves.")


class ChessState(State):
    """Episode state: the position, the moves so far and the game's settings."""

    fen: str = START_FEN
    start_fen: str = START_FEN
    moves: list[str] = Field(default_factory=list, description="Every ply since the start, in UCI.")
    agent_color: Color = "white"
    opponent: OpponentKind = "random"
    search_depth: int = 2
    max_moves: int = 100
    moves_played: int = Field(default=0, description="Moves the agent has made.")
    invalid_moves: int = Field(default=0, description="Moves of the agent that were rejected.")
    last_move: str | None = None
    opponent_last_move: str | None = None
    result: str = "*"
    termination: str | None = None
    done: bool = False
    truncated: bool = False
