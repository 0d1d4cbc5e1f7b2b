"""The old place of the sandboxed envs' run limits, now ``openenv_train.envs.run_limits``.

Deprecated: ``openenv_train.envs.sandboxing`` moved to ``openenv_train.envs.run_limits``;
its names import from here with an
:class:`~openenv_train.core.OpenEnvTrainDeprecationWarning` until openenv-train 0.2.0.
"""

from ..core import lazy_attributes, moved_names
from .run_limits import __all__ as _MOVED

__all__: list[str] = []

__getattr__, __dir__ = lazy_attributes(__name__, moved=moved_names(_MOVED, "openenv_train.envs.run_limits"))
