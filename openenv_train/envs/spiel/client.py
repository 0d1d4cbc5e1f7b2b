"""Typed clients of the pyspiel games: ``SpielEnv`` for any of them, one class per ``openspiel/<game>`` entry."""

from __future__ import annotations

from ...client import TypedEnvClient
from .._spiel_games import GAMES
from ..openspiel import OpenSpielAction, OpenSpielState
from ._models import SpielObservation

__all__ = ["GAME_CLIENTS", "SpielEnv"]


class SpielEnv(TypedEnvClient[OpenSpielAction, SpielObservation, OpenSpielState]):
    """Client of any ``openspiel/<game>`` env: ``await env.step(OpenSpielAction(action_id=...))``."""


def _client(key: str) -> type[SpielEnv]:
    name = "Spiel" + "".join(word.capitalize() for word in key.split("_")) + "Env"
    return type(name, (SpielEnv,), {"__doc__": f"Client of openspiel/{key}.", "__module__": __name__},
                env=f"openspiel/{key}")


#: The client class of each game, by class name (``SpielBreakthroughEnv``, ...); the package exports them.
GAME_CLIENTS: dict[str, type[SpielEnv]] = {cls.__name__: cls for cls in map(_client, GAMES)}
