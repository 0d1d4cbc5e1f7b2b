"""The old place of the TextArena games' table, now ``openenv_train.envs.textarena_games``.

Deprecated: ``TEXTARENA_GAMES`` and ``TextArenaGame`` import from here with an
:class:`~openenv_train.core.OpenEnvTrainDeprecationWarning` until openenv-train 0.2.0.
"""

from ..core import lazy_attributes, moved_names

__all__: list[str] = []

__getattr__, __dir__ = lazy_attributes(
    __name__, moved=moved_names(["TEXTARENA_GAMES", "TextArenaGame"], "openenv_train.envs.textarena_games"))
