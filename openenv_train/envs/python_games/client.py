"""Typed clients of the OpenSpiel games."""

from __future__ import annotations

from ...client import TypedEnvClient
from ._models import OpenSpielAction, OpenSpielObservation, OpenSpielState

__all__ = ["BlackjackEnv", "CatchEnv", "ConnectFourEnv", "KuhnPokerEnv", "OpenSpielEnv", "TicTacToeEnv",
           "TwentyFortyEightEnv"]


class OpenSpielEnv(TypedEnvClient[OpenSpielAction, OpenSpielObservation, OpenSpielState]):
    """Client of any OpenSpiel game: ``await env.step(OpenSpielAction(action_id=4))``."""


class TicTacToeEnv(OpenSpielEnv, env="tic_tac_toe"):
    """Client of tic_tac_toe."""


class ConnectFourEnv(OpenSpielEnv, env="connect4"):
    """Client of connect4."""


class KuhnPokerEnv(OpenSpielEnv, env="kuhn_poker"):
    """Client of kuhn_poker."""


class CatchEnv(OpenSpielEnv, env="catch"):
    """Client of catch."""


class BlackjackEnv(OpenSpielEnv, env="blackjack"):
    """Client of blackjack."""


class TwentyFortyEightEnv(OpenSpielEnv, env="2048"):
    """Client of 2048."""
