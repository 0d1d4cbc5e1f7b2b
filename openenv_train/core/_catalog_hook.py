"""The catalog's lookup, lent on import to the packages below it (the in-process provider, the image builder).

``openenv_train.envs`` registers itself here when it is imported; ``launch`` and ``containers`` sit below the
catalog, so they ask through :func:`catalog_lookup` instead of importing it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._errors import EnvLoadError

__all__ = ["CatalogLookup", "catalog_lookup", "catalog_registered", "register_catalog"]


@dataclass(frozen=True)
class CatalogLookup:
    """What the catalog lends: ``env_class(name_or_path)`` and ``dependencies(name)`` (pip requirements)."""

    env_class: Callable[[str], Any]
    dependencies: Callable[[str], tuple[str, ...]]


_registered: list[CatalogLookup] = []


def register_catalog(lookup: CatalogLookup) -> None:
    """Lend the catalog to the packages below it (``openenv_train.envs`` does on import)."""
    _registered[:] = [lookup]


def catalog_registered() -> bool:
    """Whether the catalog lent its lookup in this process (``openenv_train.envs`` is imported)."""
    return bool(_registered)


def catalog_lookup(env: str) -> CatalogLookup:
    """The registered catalog; ``env`` (a catalog name or env folder) names what needed it, for the error.

    Raises:
        EnvLoadError: the catalog is not loaded in this process.
    """
    if not _registered:
        raise EnvLoadError(
            f"{env!r} is a catalog name or an env folder, and the catalog is not loaded in this process; import "
            "openenv_train.envs first (typed clients do), pass a 'package.module:ClassName' path or the "
            "Environment class, or start it with provider='process'"
        )
    return _registered[0]
