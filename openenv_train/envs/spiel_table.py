"""The old place of the pyspiel games' table, now ``openenv_train.envs.pyspiel_games`` (``GAMES``, ``SpielGame``).

Deprecated: its names import from here with an :class:`~openenv_train.core.OpenEnvTrainDeprecationWarning`
until openenv-train 0.2.0.
"""

from ..core import lazy_attributes, moved_names

__all__: list[str] = []

__getattr__, __dir__ = lazy_attributes(
    __name__, moved=moved_names(["GAMES", "SpielGame"], "openenv_train.envs.pyspiel_games"))
