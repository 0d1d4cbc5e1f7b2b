"""OpenSpiel games through the real pyspiel wheel: ``openspiel/<game>`` for each game in :data:`GAMES`.

Needs the ``openspiel`` extra (``pip install 'openenv-train[openspiel]'``).
"""

from .._pyspiel_table import GAMES, SpielGame
from ._env import SpielEnvironment, spiel_env
from ._models import SpielObservation
from ._opponents import SpielOpponent
from .client import GAME_CLIENTS, SpielEnv

SpielBreakthroughEnvironment = spiel_env("breakthrough", "SpielBreakthroughEnvironment", __name__)
SpielCheckersEnvironment = spiel_env("checkers", "SpielCheckersEnvironment", __name__)
SpielOthelloEnvironment = spiel_env("othello", "SpielOthelloEnvironment", __name__)
SpielHexEnvironment = spiel_env("hex", "SpielHexEnvironment", __name__)
SpielGoEnvironment = spiel_env("go", "SpielGoEnvironment", __name__)
SpielDotsAndBoxesEnvironment = spiel_env("dots_and_boxes", "SpielDotsAndBoxesEnvironment", __name__)
SpielOwareEnvironment = spiel_env("oware", "SpielOwareEnvironment", __name__)
SpielMancalaEnvironment = spiel_env("mancala", "SpielMancalaEnvironment", __name__)
SpielNimEnvironment = spiel_env("nim", "SpielNimEnvironment", __name__)
SpielClobberEnvironment = spiel_env("clobber", "SpielClobberEnvironment", __name__)
SpielPentagoEnvironment = spiel_env("pentago", "SpielPentagoEnvironment", __name__)
SpielAmazonsEnvironment = spiel_env("amazons", "SpielAmazonsEnvironment", __name__)
SpielNineMensMorrisEnvironment = spiel_env("nine_mens_morris", "SpielNineMensMorrisEnvironment", __name__)
SpielLinesOfActionEnvironment = spiel_env("lines_of_action", "SpielLinesOfActionEnvironment", __name__)
SpielBackgammonEnvironment = spiel_env("backgammon", "SpielBackgammonEnvironment", __name__)
SpielLiarsDiceEnvironment = spiel_env("liars_dice", "SpielLiarsDiceEnvironment", __name__)
SpielLeducPokerEnvironment = spiel_env("leduc_poker", "SpielLeducPokerEnvironment", __name__)
SpielGoofspielEnvironment = spiel_env("goofspiel", "SpielGoofspielEnvironment", __name__)
SpielBattleshipEnvironment = spiel_env("battleship", "SpielBattleshipEnvironment", __name__)
SpielPhantomTttEnvironment = spiel_env("phantom_ttt", "SpielPhantomTttEnvironment", __name__)
SpielDarkHexEnvironment = spiel_env("dark_hex", "SpielDarkHexEnvironment", __name__)

globals().update(GAME_CLIENTS)  # SpielBreakthroughEnv, ...: the typed client of each game

__all__ = [
    *GAME_CLIENTS,
    "GAMES",
    "SpielAmazonsEnvironment",
    "SpielBackgammonEnvironment",
    "SpielBattleshipEnvironment",
    "SpielBreakthroughEnvironment",
    "SpielCheckersEnvironment",
    "SpielClobberEnvironment",
    "SpielDarkHexEnvironment",
    "SpielDotsAndBoxesEnvironment",
    "SpielEnv",
    "SpielEnvironment",
    "SpielGame",
    "SpielGoEnvironment",
    "SpielGoofspielEnvironment",
    "SpielHexEnvironment",
    "SpielLeducPokerEnvironment",
    "SpielLiarsDiceEnvironment",
    "SpielLinesOfActionEnvironment",
    "SpielMancalaEnvironment",
    "SpielNimEnvironment",
    "SpielNineMensMorrisEnvironment",
    "SpielObservation",
    "SpielOpponent",
    "SpielOthelloEnvironment",
    "SpielOwareEnvironment",
    "SpielPentagoEnvironment",
    "SpielPhantomTttEnvironment",
    "spiel_env",
]
