"""The Ray rollout pool: actors, dispatch, backpressure and failure handling (guide: docs/guides/rollouts.md).

Ray is imported only when a pool starts; importing this package does not import it. Only :class:`PoolConfig`
loads with the package (the CLI builds options from it); the rest loads on first use.

- :class:`RolloutPool`: ``submit``/``as_completed``/``run`` episodes over Ray actors, rows to a TraceWriter.
- :class:`Fleet`: env server fleets (``env=[URL, ...]``), balanced with health checks.
- :class:`PoolConfig`: its options. :class:`EpisodeSpec`, :func:`make_groups`: what to run (GRPO groups).
- :func:`start_private_ray`: a local Ray on 127.0.0.1 that ignores any other cluster on the machine.
- Agent loops: :class:`ScriptedAgent`, :class:`TextAgent`, :class:`ToolAgent`, or any ``async (ctx) -> None``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import lazy_attributes
from ._config import PoolConfig

if TYPE_CHECKING:
    from ._actor import RolloutActor, is_url
    from ._agents import AgentLoop, ScriptedAgent, TextAgent, ToolAgent, message_action, render_observation
    from ._context import EpisodeContext, Truncated
    from ._episode import EpisodeSpec, make_groups
    from ._errors import EpisodeTimeout, NoLiveActors, PoolClosed, PoolError, PoolStartTimeout, RayUnavailable
    from ._fleet import Fleet, ServerStats, fleet_urls, published_capacity
    from ._metrics import PoolMetrics
    from ._mix import MixedPool
    from ._mixing import MIX_KEY, MixEnv, MixEnvFailed, weighted_schedule
    from ._policy import ChatPolicy, ModelReply, PolicyCallError, PolicyUnavailable
    from ._pool import RolloutPool
    from ._ray import start_private_ray
    from ._rows import Job, build_row

__all__ = [
    "AgentLoop",
    "ChatPolicy",
    "EpisodeContext",
    "EpisodeSpec",
    "EpisodeTimeout",
    "Fleet",
    "MIX_KEY",
    "MixEnv",
    "MixEnvFailed",
    "MixedPool",
    "Job",
    "ModelReply",
    "NoLiveActors",
    "PolicyCallError",
    "PolicyUnavailable",
    "PoolClosed",
    "PoolConfig",
    "PoolError",
    "PoolMetrics",
    "PoolStartTimeout",
    "RayUnavailable",
    "RolloutActor",
    "RolloutPool",
    "ScriptedAgent",
    "ServerStats",
    "TextAgent",
    "ToolAgent",
    "Truncated",
    "build_row",
    "fleet_urls",
    "is_url",
    "make_groups",
    "message_action",
    "published_capacity",
    "render_observation",
    "start_private_ray",
    "weighted_schedule",
]

_LAZY = {
    "RolloutActor": "._actor",
    "is_url": "._actor",
    "AgentLoop": "._agents",
    "ScriptedAgent": "._agents",
    "TextAgent": "._agents",
    "ToolAgent": "._agents",
    "message_action": "._agents",
    "render_observation": "._agents",
    "EpisodeContext": "._context",
    "Truncated": "._context",
    "EpisodeSpec": "._episode",
    "make_groups": "._episode",
    "EpisodeTimeout": "._errors",
    "NoLiveActors": "._errors",
    "PoolClosed": "._errors",
    "PoolError": "._errors",
    "PoolStartTimeout": "._errors",
    "RayUnavailable": "._errors",
    "Fleet": "._fleet",
    "ServerStats": "._fleet",
    "fleet_urls": "._fleet",
    "published_capacity": "._fleet",
    "PoolMetrics": "._metrics",
    "MIX_KEY": "._mixing",
    "MixEnv": "._mixing",
    "MixEnvFailed": "._mixing",
    "MixedPool": "._mix",
    "weighted_schedule": "._mixing",
    "ChatPolicy": "._policy",
    "ModelReply": "._policy",
    "PolicyCallError": "._policy",
    "PolicyUnavailable": "._policy",
    "RolloutPool": "._pool",
    "start_private_ray": "._ray",
    "Job": "._rows",
    "build_row": "._rows",
}
"""Each name but PoolConfig, and its module: loaded on first use (the actor brings the trace and policy packages)."""


__getattr__, __dir__ = lazy_attributes(__name__, lazy=_LAZY)
