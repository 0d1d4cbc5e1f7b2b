"""Typed clients of the TextArena games: ``TextArenaEnv`` for any, one class per ``textarena/<game>`` entry."""

from __future__ import annotations

from ...client import TypedEnvClient
from .._textarena_games import TEXTARENA_GAMES
from ._models import TextArenaAction, TextArenaObservation, TextArenaState

__all__ = ["GAME_CLIENTS", "TextArenaEnv"]


class TextArenaEnv(TypedEnvClient[TextArenaAction, TextArenaObservation, TextArenaState]):
    """Client of any ``textarena/<game>`` env: ``await env.step(TextArenaAction(message="[...]"))``."""


def _client(key: str) -> type[TextArenaEnv]:
    name = "TextArena" + "".join(word.capitalize() for word in key.split("_")) + "Env"
    return type(name, (TextArenaEnv,), {"__doc__": f"Client of textarena/{key}.", "__module__": __name__},
                env=f"textarena/{key}")


#: The client class of each game, by class name (``TextArenaSudokuEnv``, ...); the package exports them.
GAME_CLIENTS: dict[str, type[TextArenaEnv]] = {cls.__name__: cls for cls in map(_client, TEXTARENA_GAMES)}
