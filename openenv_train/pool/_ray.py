"""Lazy Ray: import it and start a private cluster (or join a configured one) only when a pool starts.

With no address configured the pool never joins a cluster it happens to find: Ray's own ``ray.init()`` joins the
cluster named in ``ray_current_cluster`` (left by any ``ray start --head`` on the machine, alive or dead), which
fails with ``num_cpus`` given, or hangs on a dead one, or lands the job on a user's cluster it must not touch.
"""

from __future__ import annotations

import os
from typing import Any

from ._config import PoolConfig
from ._errors import RayUnavailable

__all__ = ["actor_errors", "ensure_ray", "start_private_ray"]

_INSTALL = "the rollout pool needs Ray: pip install 'ray[default]==2.60.0'"


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(_INSTALL) from None
    return ray


def start_private_ray(num_cpus: int | None = None, *, log_to_driver: bool = True) -> Any:
    """Start a new local Ray cluster on 127.0.0.1, owned by this process, whatever else runs on the machine.

    A running ``ray start --head``, a stale ``ray_current_cluster`` file and other processes' clusters are left
    alone (``address="local"`` never looks them up). Stop it with ``ray.shutdown()``.

    Args:
        num_cpus: CPUs the cluster offers (default: the machine's).
        log_to_driver: Forward the workers' output to this process.

    Returns:
        The ``ray`` module, initialised.

    Raises:
        RayUnavailable: Ray is not installed, or this process is already connected to a Ray cluster.
    """
    ray = _import_ray()
    if ray.is_initialized():
        raise RayUnavailable("this process is already connected to a Ray cluster; call ray.shutdown() first")
    # On Linux Ray turns 127.0.0.1 into the machine's outward address and listens on every interface; its
    # loopback-only mode (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, read once when ray is imported) keeps a private
    # cluster off the network. The flag is set only around the start: the node's address is fixed from then on.
    from ray._private import ray_constants

    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        # Ray starts its workers at nice 15; the pool's actors and the env servers they start are the job's own
        # work, and beside any other busy process on the machine they then got a few percent of a core (actor
        # restarts took minutes under a CPU hog). They run at the driver's priority instead.
        ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False,
                 _node_ip_address="127.0.0.1", log_to_driver=log_to_driver,
                 _system_config={"worker_niceness": 0})
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailable(f"cannot start a local Ray: {exc}") from None
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved
    return ray


def ensure_ray(config: PoolConfig) -> tuple[Any, bool]:
    """The ``ray`` module, initialised, and whether this call started the cluster (so its owner stops it).

    In order: the cluster this process is already connected to; ``config.ray_address`` (``auto`` finds a running
    one); ``RAY_ADDRESS`` (set by ``ray job submit`` for its jobs); else a private local cluster.

    Raises:
        RayUnavailable: Ray is not installed or the cluster cannot be started or reached.
    """
    ray = _import_ray()
    if ray.is_initialized():
        return ray, False
    address = config.ray_address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        return start_private_ray(config.ray_num_cpus), True
    try:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        source = "ray_address" if config.ray_address else "RAY_ADDRESS"
        raise RayUnavailable(f"cannot join the Ray cluster at {address!r} ({source}): {exc}; start it, or unset "
                             f"{source} to run on a private local cluster") from None
    return ray, False


def actor_errors() -> tuple[type[BaseException], ...]:
    """Ray errors that mean an actor (or its worker) died or is restarting: the episode is re-dispatched."""
    from ray import exceptions as rex

    return (rex.RayActorError, rex.ActorUnavailableError, rex.WorkerCrashedError, rex.TaskCancelledError)


def restarting(exc: BaseException) -> bool:
    """Whether an actor error says the actor is unreachable while Ray restarts it (the call never ran)."""
    from ray import exceptions as rex

    return isinstance(exc, rex.ActorUnavailableError)
