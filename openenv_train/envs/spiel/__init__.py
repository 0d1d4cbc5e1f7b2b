"""The old place of the pyspiel games (``openspiel/<game>``), now ``openenv_train.envs.pyspiel_games``.

Deprecated: ``openenv_train.envs.spiel`` moved to ``openenv_train.envs.pyspiel_games``;
its names import from here with an
:class:`~openenv_train.core.OpenEnvTrainDeprecationWarning` until openenv-train 0.2.0.
"""

from ...core import lazy_attributes, moved_names
from ..pyspiel_games import __all__ as _MOVED

__all__: list[str] = []

__getattr__, __dir__ = lazy_attributes(__name__, moved=moved_names(_MOVED, "openenv_train.envs.pyspiel_games"))
