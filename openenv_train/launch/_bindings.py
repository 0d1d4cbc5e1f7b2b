"""The generic client class, lent by ``openenv_train.client`` (above ``launch``) when it is imported."""

from __future__ import annotations

from typing import Any

from ..core import catalog_lookup, catalog_registered

__all__ = ["default_client_class", "register_default_client", "resolve_env"]

_client_classes: list[type] = []


def register_default_client(cls: type) -> None:
    """The client class ``DockerProvider.client()`` connects when given none."""
    _client_classes[:] = [cls]


def default_client_class() -> type:
    """The client class registered by ``openenv_train.client`` (importing it registers ``GenericEnvClient``)."""
    if not _client_classes:
        raise TypeError("no client class given and openenv_train.client is not imported; pass client_cls "
                        "(for instance openenv_train.client.GenericEnvClient)")
    return _client_classes[0]


def resolve_env(env: str) -> Any:
    """The Environment class of a ``module:Class`` path, or of a catalog name or env folder (through the catalog)."""
    if ":" in env and not catalog_registered():
        from ..server import load_class  # the server loads lazily: importing launch stays light

        return load_class(env)
    return catalog_lookup(env).env_class(env)  # raises EnvLoadError (what to do) when the catalog is not loaded
