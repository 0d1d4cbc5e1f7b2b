"""OpenSpiel-compatible games (pure Python): tic_tac_toe, connect4, catch, blackjack, 2048, kuhn_poker.

Each game reproduces OpenSpiel's rules, action ids, observation/information-state
tensors and rewards, and is served with the observation shape of OpenEnv's
``openspiel_env``; ``open_spiel`` itself is not needed (tests compare with it when installed).
"""

from ._blackjack import BlackjackEnvironment, BlackjackState
from ._catch import CatchEnvironment, CatchState
from ._connect_four import ConnectFourEnvironment, ConnectFourState
from ._env import OpenSpielEnvironment
from ._game import CHANCE_PLAYER, TERMINAL_PLAYER, GameState
from ._kuhn_poker import KuhnPokerEnvironment, KuhnPokerState
from ._models import OpenSpielAction, OpenSpielObservation, OpenSpielState
from ._opponents import OPPONENTS, OpponentName
from ._tic_tac_toe import TicTacToeEnvironment, TicTacToeState
from ._twenty_forty_eight import TwentyFortyEightEnvironment, TwentyFortyEightState
from .client import BlackjackEnv, CatchEnv, ConnectFourEnv, KuhnPokerEnv, OpenSpielEnv, TicTacToeEnv, TwentyFortyEightEnv

__all__ = [
    "CHANCE_PLAYER",
    "OPPONENTS",
    "TERMINAL_PLAYER",
    "BlackjackEnv",
    "BlackjackEnvironment",
    "BlackjackState",
    "CatchEnv",
    "CatchEnvironment",
    "CatchState",
    "ConnectFourEnv",
    "ConnectFourEnvironment",
    "ConnectFourState",
    "GameState",
    "KuhnPokerEnv",
    "KuhnPokerEnvironment",
    "KuhnPokerState",
    "OpenSpielAction",
    "OpenSpielEnv",
    "OpenSpielEnvironment",
    "OpenSpielObservation",
    "OpenSpielState",
    "OpponentName",
    "TicTacToeEnv",
    "TicTacToeEnvironment",
    "TicTacToeState",
    "TwentyFortyEightEnv",
    "TwentyFortyEightEnvironment",
    "TwentyFortyEightState",
]
