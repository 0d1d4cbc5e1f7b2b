"""Errors of the rollout pool (one root, :class:`PoolError`)."""

from __future__ import annotations

from ..core import OpenEnvTrainError

__all__ = ["EpisodeTimeout", "NoLiveActors", "PoolClosed", "PoolError", "PoolStartTimeout", "RayUnavailable"]


class PoolError(OpenEnvTrainError):
    """Root of the pool's errors."""


class PoolClosed(PoolError):
    """A call was made on a pool that was closed."""


class RayUnavailable(PoolError):
    """Ray is not installed or a cluster cannot be reached."""


class PoolStartTimeout(PoolError):
    """The actors and their env servers were not ready within ``start_timeout_s``."""


class NoLiveActors(PoolError):
    """Every actor of the pool died beyond its restart budget."""


class EpisodeTimeout(PoolError):
    """An episode ran past ``episode_timeout_s``."""
