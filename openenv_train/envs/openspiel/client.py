"""The old place of the pure-Python games' typed clients, now ``openenv_train.envs.python_games.client``.

Deprecated: ``openenv_train.envs.openspiel.client`` moved to ``openenv_train.envs.python_games.client``;
its names import from here with an
:class:`~openenv_train.core.OpenEnvTrainDeprecationWarning` until openenv-train 0.2.0.
"""

from ...core import lazy_attributes, moved_names
from ..python_games.client import __all__ as _MOVED

__all__: list[str] = []

__getattr__, __dir__ = lazy_attributes(__name__, moved=moved_names(_MOVED, "openenv_train.envs.python_games.client"))
