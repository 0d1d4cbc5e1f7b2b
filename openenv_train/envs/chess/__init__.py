"""Chess against a random or shallow-search opponent, built on python-chess."""

from ._env import ChessEnvironment
from ._models import ChessAction, ChessObservation, ChessState
from ._moves import parse_move
from ._opponents import choose_move, material, random_move, search_move
from .client import ChessEnv

__all__ = [
    "ChessAction",
    "ChessEnv",
    "ChessEnvironment",
    "ChessObservation",
    "ChessState",
    "choose_move",
    "material",
    "parse_move",
    "random_move",
    "search_move",
]
