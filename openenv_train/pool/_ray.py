"""Lazy Ray: import it and start or join a cluster only when a pool starts."""

from __future__ import annotations

import os
from typing import Any

from ._config import PoolConfig
from ._errors import RayUnavailable

__all__ = ["actor_errors", "ensure_ray"]


def ensure_ray(config: PoolConfig) -> Any:
    """The ``ray`` module, initialised: the configured address, ``RAY_ADDRESS`` (a job), or a local cluster.

    Raises:
        RayUnavailable: Ray is not installed or the cluster cannot be reached.
    """
    try:
        import ray
    except ImportError:
        raise RayUnavailable("the rollout pool needs Ray: pip install 'ray[default]==2.60.0'") from None
    if ray.is_initialized():
        return ray
    options: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": True}
    if config.ray_address is None and not os.environ.get("RAY_ADDRESS"):
        options.update(include_dashboard=False, num_cpus=config.ray_num_cpus or os.cpu_count() or 1)
    else:
        options["address"] = config.ray_address
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailable(f"cannot start or join Ray ({options.get('address') or 'local'}): {exc}") from None
    return ray


def actor_errors() -> tuple[type[BaseException], ...]:
    """Ray errors that mean an actor (or its worker) died or is restarting: the episode is re-dispatched."""
    from ray import exceptions as rex

    return (rex.RayActorError, rex.ActorUnavailableError, rex.WorkerCrashedError, rex.TaskCancelledError)
