"""Offline single-player TextArena games: ``textarena/<game>`` for each game of the catalog.

Needs the ``textarena`` extra (``pip install 'openenv-train[textarena]'``).
"""

from .._textarena_table import TEXTARENA_GAMES, TextArenaGame
from ._env import TextArenaEnvironment, textarena_env
from ._models import TextArenaAction, TextArenaObservation, TextArenaState
from .client import GAME_CLIENTS, TextArenaEnv

TextArenaSudokuEnvironment = textarena_env("sudoku", "TextArenaSudokuEnvironment", __name__)
TextArenaMinesweeperEnvironment = textarena_env("minesweeper", "TextArenaMinesweeperEnvironment", __name__)
TextArenaMastermindEnvironment = textarena_env("mastermind", "TextArenaMastermindEnvironment", __name__)
TextArenaSokobanEnvironment = textarena_env("sokoban", "TextArenaSokobanEnvironment", __name__)
TextArenaTowerOfHanoiEnvironment = textarena_env("tower_of_hanoi", "TextArenaTowerOfHanoiEnvironment", __name__)
TextArenaLightsOutEnvironment = textarena_env("lights_out", "TextArenaLightsOutEnvironment", __name__)
TextArenaFifteenPuzzleEnvironment = textarena_env("fifteen_puzzle", "TextArenaFifteenPuzzleEnvironment", __name__)
TextArenaFrozenLakeEnvironment = textarena_env("frozen_lake", "TextArenaFrozenLakeEnvironment", __name__)
TextArenaCountdownEnvironment = textarena_env("countdown", "TextArenaCountdownEnvironment", __name__)
TextArenaPegJumpEnvironment = textarena_env("peg_jump", "TextArenaPegJumpEnvironment", __name__)
TextArenaCryptarithmEnvironment = textarena_env("cryptarithm", "TextArenaCryptarithmEnvironment", __name__)
TextArenaSlitherlinkEnvironment = textarena_env("slitherlink", "TextArenaSlitherlinkEnvironment", __name__)
TextArenaLogicPuzzleEnvironment = textarena_env("logic_puzzle", "TextArenaLogicPuzzleEnvironment", __name__)
TextArenaThreeCardMonteEnvironment = textarena_env("three_card_monte", "TextArenaThreeCardMonteEnvironment", __name__)

globals().update(GAME_CLIENTS)  # TextArenaSudokuEnv, ...: the typed client of each game

__all__ = [
    *GAME_CLIENTS,
    "TEXTARENA_GAMES",
    "TextArenaEnv",
    "TextArenaAction",
    "TextArenaCountdownEnvironment",
    "TextArenaCryptarithmEnvironment",
    "TextArenaEnvironment",
    "TextArenaFifteenPuzzleEnvironment",
    "TextArenaFrozenLakeEnvironment",
    "TextArenaGame",
    "TextArenaLightsOutEnvironment",
    "TextArenaLogicPuzzleEnvironment",
    "TextArenaMastermindEnvironment",
    "TextArenaMinesweeperEnvironment",
    "TextArenaObservation",
    "TextArenaPegJumpEnvironment",
    "TextArenaSlitherlinkEnvironment",
    "TextArenaSokobanEnvironment",
    "TextArenaState",
    "TextArenaSudokuEnvironment",
    "TextArenaThreeCardMonteEnvironment",
    "TextArenaTowerOfHanoiEnvironment",
    "textarena_env",
]
