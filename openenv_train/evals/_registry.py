"""Inspect AI entry point: registers the ``openenv`` model API (loaded lazily by Inspect's registry).

pyproject: ``[project.entry-points.inspect_ai]`` ``openenv_train = "openenv_train.evals._registry"``.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import modelapi

__all__ = ["openenv"]


@modelapi(name="openenv")
def openenv() -> Any:
    """The :class:`~openenv_train.evals._model.OpenEnvModelAPI` class (imported on first use)."""
    from ._model import OpenEnvModelAPI

    return OpenEnvModelAPI
