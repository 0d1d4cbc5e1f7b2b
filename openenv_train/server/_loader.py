"""Resolve ``module:Class`` paths to Environment classes, with errors that say what to fix."""

from __future__ import annotations

import importlib
from typing import Any

from ..core import EnvLoadError
from ._environment import Environment

__all__ = ["load_class"]


def load_class(path: str) -> type[Environment[Any, Any, Any]]:
    """Import ``package.module:ClassName`` and check it is an Environment subclass.

    Raises:
        EnvLoadError: the path is malformed, the module does not import, or the name is missing or wrong.
    """
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise EnvLoadError(f"{path!r} is not a 'package.module:ClassName' path")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise EnvLoadError(
            f"cannot import module {module_name!r} ({type(exc).__name__}: {exc}); check the module path, "
            "that its package is installed, and that the working directory is on PYTHONPATH"
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            names = sorted(n for n in dir(module) if not n.startswith("_"))
            raise EnvLoadError(
                f"module {module_name!r} has no attribute {attr!r}; it defines: {', '.join(names[:20]) or 'nothing public'}"
            ) from None
    if not (isinstance(obj, type) and issubclass(obj, Environment)):
        raise EnvLoadError(f"{path!r} is {obj!r}, not a subclass of openenv_train.server.Environment")
    return obj
