"""Typed clients of the pyspiel games: ``SpielEnv`` for any of them, one class per ``openspiel/<game>`` entry."""

from __future__ import annotations

from ...client import TypedEnvClient
from .._pyspiel_table import GAMES
from ..family_clients import camel, family_client
from ..python_games import OpenSpielAction, OpenSpielState
from ._models import SpielObservation

__all__ = ["GAME_CLIENTS", "SpielEnv"]


class SpielEnv(TypedEnvClient[OpenSpielAction, SpielObservation, OpenSpielState]):
    """Client of any ``openspiel/<game>`` env: ``await env.step(OpenSpielAction(action_id=...))``."""


#: The client class of each game, by class name (``SpielBreakthroughEnv``, ...); the package exports them.
GAME_CLIENTS: dict[str, type[SpielEnv]] = {cls.__name__: cls for cls in (
    family_client(SpielEnv, f"openspiel/{key}", f"Spiel{camel(key)}Env", __name__) for key in GAMES)}
