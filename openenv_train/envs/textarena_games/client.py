"""Typed clients of the TextArena games: ``TextArenaEnv`` for any, one class per ``textarena/<game>`` entry."""

from __future__ import annotations

from ...client import TypedEnvClient
from .._textarena_table import TEXTARENA_GAMES
from ..family_clients import camel, family_client
from ._models import TextArenaAction, TextArenaObservation, TextArenaState

__all__ = ["GAME_CLIENTS", "TextArenaEnv"]


class TextArenaEnv(TypedEnvClient[TextArenaAction, TextArenaObservation, TextArenaState]):
    """Client of any ``textarena/<game>`` env: ``await env.step(TextArenaAction(message="[...]"))``."""


#: The client class of each game, by class name (``TextArenaSudokuEnv``, ...); the package exports them.
GAME_CLIENTS: dict[str, type[TextArenaEnv]] = {cls.__name__: cls for cls in (
    family_client(TextArenaEnv, f"textarena/{key}", f"TextArena{camel(key)}Env", __name__) for key in TEXTARENA_GAMES)}
