"""The Ray rollout pool: actors, dispatch, backpressure and failure handling (see DESIGN.md).

Ray is imported only when a pool starts; importing this package does not import it.

- :class:`RolloutPool`: ``submit``/``as_completed``/``run`` episodes over Ray actors, rows to a TraceWriter.
- :class:`PoolConfig`: its options. :class:`EpisodeSpec`, :func:`make_groups`: what to run (GRPO groups).
- Agent loops: :class:`ScriptedAgent`, :class:`TextAgent`, :class:`ToolAgent`, or any ``async (ctx) -> None``.
"""

from ._actor import RolloutActor, is_url
from ._agents import AgentLoop, ScriptedAgent, TextAgent, ToolAgent, message_action, render_observation
from ._config import PoolConfig
from ._context import EpisodeContext, Truncated
from ._episode import EpisodeSpec, make_groups
from ._errors import EpisodeTimeout, NoLiveActors, PoolClosed, PoolError, RayUnavailable
from ._metrics import PoolMetrics
from ._policy import ChatPolicy, ModelReply, PolicyCallError
from ._pool import RolloutPool
from ._rows import Job, build_row

__all__ = [
    "AgentLoop",
    "ChatPolicy",
    "EpisodeContext",
    "EpisodeSpec",
    "EpisodeTimeout",
    "Job",
    "ModelReply",
    "NoLiveActors",
    "PolicyCallError",
    "PoolClosed",
    "PoolConfig",
    "PoolError",
    "PoolMetrics",
    "RayUnavailable",
    "RolloutActor",
    "RolloutPool",
    "ScriptedAgent",
    "TextAgent",
    "ToolAgent",
    "Truncated",
    "build_row",
    "is_url",
    "make_groups",
    "message_action",
    "render_observation",
]
