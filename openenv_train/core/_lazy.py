"""Module attributes loaded on first use, and moved names that still import from their old place with a warning.

One helper serves both, as websockets' ``lazy_import(globals(), aliases=..., deprecated_aliases=...)`` does::

    __getattr__, __dir__ = lazy_attributes(
        __name__,
        lazy={"ViewerServer": "._viewer"},                      # loaded on first use, no warning
        moved={"TraceWriter": "openenv_train.trace"},           # DeprecationWarning naming the new place
    )

A value is cached in the module's globals after its first lookup, so the hook runs once per name (a moved name
warns once per process, at its first import from the old place).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["REMOVED_IN", "OpenEnvTrainDeprecationWarning", "lazy_attributes", "moved_names"]

#: The release in which the moved names stop importing from their old places.
REMOVED_IN = "0.2.0"


class OpenEnvTrainDeprecationWarning(DeprecationWarning):
    """A name of this project was used from a place it moved away from (the message names the new one)."""


def lazy_attributes(
    module: str,
    *,
    lazy: Mapping[str, str] | None = None,
    moved: Mapping[str, str] | None = None,
    removed_in: str = REMOVED_IN,
    fallback: Callable[[str], Any] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` for names it loads on first use.

    Args:
        module: the module's ``__name__``.
        lazy: name -> the module that defines it (``"._viewer"`` relative to ``module``, or absolute), imported
            on first use.
        moved: name -> the module it now lives in (absolute); using the name from ``module`` warns with
            :class:`OpenEnvTrainDeprecationWarning` naming the new place and ``removed_in``.
        removed_in: the release in which the moved names go away from ``module``.
        fallback: called with any other name; returns its value or raises ``AttributeError``.

    Returns:
        ``(__getattr__, __dir__)``, to assign at the module's top level.
    """
    lazy = dict(lazy or {})
    moved = dict(moved or {})
    if clash := set(lazy) & set(moved):
        raise ValueError(f"names both lazy and moved in {module}: {sorted(clash)}")

    def __getattr__(name: str) -> Any:
        if name in lazy:
            value = getattr(importlib.import_module(lazy[name], module), name)
        elif name in moved:
            new = moved[name]
            warnings.warn(
                f"{module}.{name} moved to {new}.{name}; import it from {new} "
                f"({module}.{name} goes away in openenv-train {removed_in})",
                OpenEnvTrainDeprecationWarning, stacklevel=2,
            )
            value = getattr(importlib.import_module(new), name)
        elif fallback is not None:
            return fallback(name)
        else:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        setattr(sys.modules[module], name, value)  # later lookups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[module])) | set(lazy) | set(moved))

    return __getattr__, __dir__


def moved_names(names: Iterable[str], new: str) -> dict[str, str]:
    """``{name: new}`` for each of ``names``: the ``moved`` argument of :func:`lazy_attributes`."""
    return dict.fromkeys(names, new)
