"""The old place of the generated families' client helpers, now ``openenv_train.envs.family_clients``.

Deprecated: ``openenv_train.envs.family`` moved to ``openenv_train.envs.family_clients``;
its names import from here with an
:class:`~openenv_train.core.OpenEnvTrainDeprecationWarning` until openenv-train 0.2.0.
"""

from ..core import lazy_attributes, moved_names
from .family_clients import __all__ as _MOVED

__all__: list[str] = []

__getattr__, __dir__ = lazy_attributes(__name__, moved=moved_names(_MOVED, "openenv_train.envs.family_clients"))
