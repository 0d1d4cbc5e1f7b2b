"""PoolConfig: the pool's options, one typed dataclass (YAML and ``key=value`` friendly)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..core import option

__all__ = ["PoolConfig"]


@dataclass
class PoolConfig:
    """Options of a :class:`~openenv_train.pool.RolloutPool` beyond its env and policy.

    Each field's help is its ``metadata["help"]`` (:func:`~openenv_train.core.option`): ``openenv-train collect``
    builds its pool options from them, and a recipe's ``pool:`` section is a PoolConfig. Mappings and lists are
    not command-line options.

    Example:
        >>> PoolConfig(num_actors=2, sessions_per_actor=4).capacity
        8
    """

    num_actors: int = field(default=2, metadata=option(
        "Ray actors, each with its own env server (or URL) and policy client."))
    sessions_per_actor: int = field(default=8, metadata=option(
        "Env sessions (episode slots) each actor holds open at once."))
    episodes_per_call: int = field(default=1, metadata=option(
        "Episodes sent to an actor in one Ray call (free slots permitting); more cuts Ray's per-call cost on fast "
        "envs, and their rows then arrive together."))
    max_in_flight: int | None = field(default=None, metadata=option(
        "Cap on episodes dispatched and not yet finished (backpressure); None = every slot."))
    episode_timeout_s: float = field(default=300.0, metadata=option(
        "Limit on one episode attempt (reset, every model call and step)."))
    max_retries: int = field(default=2, metadata=option(
        "Extra attempts of an episode whose env session, env server or actor broke."))
    retry_backoff_s: float = field(default=0.25, metadata=option(
        "Wait before attempt n+1 of an episode: ``retry_backoff_s * 2**(n-1)`` (lets a replaced server come up)."))
    retry_timeouts: bool = field(default=False, metadata=option(
        "Also retry an episode that ran past ``episode_timeout_s`` (else it becomes an ``ok=False`` row)."))
    max_turns: int = field(default=32, metadata=option("Policy turns per episode before it is truncated."))
    max_tokens: int | None = field(default=None, metadata=option(
        "Completion tokens per episode (model policies) before it is truncated."))
    max_staleness: int | None = field(default=None, metadata=option(
        "Re-run an episode whose policy version is more than this many versions behind the pool's current one."))
    max_restarts: int = field(default=3, metadata=option(
        "Ray restarts of a dead actor (``max_restarts`` of the actor)."))
    client: Literal["generic", "mcp"] = field(default="generic", metadata=option(
        "Env client kind: dicts in/out, or MCP tools (``call_tool``)."))
    env_vars: dict[str, str] = field(default_factory=dict, metadata=option(
        "Variables added to each env server's environment (e.g. ``PYTHONPATH`` for a ``module:Class`` env).",
        cli=False))
    server_args: list[str] = field(default_factory=list, metadata=option(
        "Extra ``openenv-train serve`` options of each env server.", cli=False))
    sandbox: bool = field(default=False, metadata=option(
        "Run each env server in the OS sandbox (no network; reached through a Unix socket)."))
    server_capacity: int | None = field(default=None, metadata=option(
        "Fleets: sessions each server takes at once; None reads its ``/metadata`` (``max_sessions``), else no cap."))
    env_token: str | None = field(default=None, metadata=option(
        "Token sent to URL env servers (a fleet's one token); None reads ``$OPENENV_TRAIN_TOKEN``."))
    max_queued: int | None = field(default=None, metadata=option(
        "Episodes held by the driver beyond those in flight: ``as_completed`` pulls its specs lazily and ``submit`` "
        "runs the dispatch loop while the queue is full (bounded driver memory); None = no bound."))
    write: Literal["driver", "actors"] = field(default="driver", metadata=option(
        "Who writes the trace rows: the driver (every row passes through it) or the actors (each writes its own "
        "Parquet shards; the driver merges one manifest of accepted episodes). ``actors`` needs a writer."))
    start_timeout_s: float = field(default=300.0, metadata=option(
        "Limit on the actors and their env servers getting ready at start (a busy machine starts them slowly)."))
    reply_timeout_s: float = field(default=60.0, metadata=option("Limit on each env reply."))
    model_timeout_s: float = field(default=300.0, metadata=option("Limit on each policy call."))
    model: str | None = field(default=None, metadata=option(
        "Model name sent to an OpenAI-compatible policy (None: the server's own)."))
    policy_token: str | None = field(default=None, metadata=option(
        "Token of a policy endpoint started with one (``PolicyServer(token=...)``): each call then sends "
        "``<token>:<capture session id>`` as its key; None sends the bare session id."))
    sampling: dict[str, float | int] = field(default_factory=dict, metadata=option(
        "Sampling options sent with each policy call (``temperature``, ``max_tokens``, ...).", cli=False))
    policy_version: int | None = field(default=None, metadata=option(
        "Version (training step) of the policy's weights at start; ``set_policy_version`` moves it."))
    run_id: str = field(default="", metadata=option("Run id stamped on every row (default: a random one)."))
    show_progress: bool = field(default=False, metadata=option(
        "Show a rich progress bar with live metrics while ``run``/``as_completed`` go."))
    ray_address: str | None = field(default=None, metadata=option(
        "A Ray cluster to join (``auto``: the running one, ``ray://...``); None: ``RAY_ADDRESS`` (a job) or a private "
        "local one."))
    ray_num_cpus: int | None = field(default=None, metadata=option("CPUs of a local Ray started by the pool."))
    actor_num_cpus: float = field(default=0.0, metadata=option(
        "CPUs each actor reserves (0 lets many I/O-bound actors share a small machine)."))
    actor_resources: dict[str, float] = field(default_factory=dict, metadata=option(
        'Custom Ray resources each actor reserves: ``{"rollout": 1}`` keeps the actors on the nodes started with '
        '``ray start --resources=\'{"rollout": N}\'`` (at most N actors there), e.g. off the head node.', cli=False))
    actor_scheduling: Literal["default", "spread"] = field(default="default", metadata=option(
        "Ray's placement of the actors: ``default`` packs them (the driver's node first), ``spread`` spreads them "
        "over the nodes that fit (their env servers and sessions with them)."))

    def __post_init__(self) -> None:
        if self.num_actors < 1 or self.sessions_per_actor < 1:
            raise ValueError(f"num_actors and sessions_per_actor must be >= 1, got {self.num_actors} and "
                             f"{self.sessions_per_actor}")
        if self.episodes_per_call < 1 or self.retry_backoff_s < 0:
            raise ValueError(f"episodes_per_call must be >= 1 and retry_backoff_s >= 0, got {self.episodes_per_call} "
                             f"and {self.retry_backoff_s}")
        if self.max_in_flight is not None and self.max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1 or None, got {self.max_in_flight}")
        if min(self.episode_timeout_s, self.start_timeout_s, self.reply_timeout_s, self.model_timeout_s) <= 0:
            raise ValueError("episode_timeout_s, start_timeout_s, reply_timeout_s and model_timeout_s must be > 0")
        if self.max_retries < 0 or self.max_restarts < 0 or self.max_turns < 1:
            raise ValueError("max_retries and max_restarts must be >= 0 and max_turns >= 1")
        if self.max_staleness is not None and self.max_staleness < 0:
            raise ValueError(f"max_staleness must be >= 0 or None, got {self.max_staleness}")
        if self.server_capacity is not None and self.server_capacity < 1:
            raise ValueError(f"server_capacity must be >= 1 or None, got {self.server_capacity}")
        if self.max_queued is not None and self.max_queued < 1:
            raise ValueError(f"max_queued must be >= 1 or None, got {self.max_queued}")
        if self.write not in ("driver", "actors"):
            raise ValueError(f"write must be 'driver' or 'actors', got {self.write!r}")
        if self.actor_scheduling not in ("default", "spread"):
            raise ValueError(f"actor_scheduling must be 'default' or 'spread', got {self.actor_scheduling!r}")
        if any(not isinstance(v, int | float) or v < 0 for v in self.actor_resources.values()):
            raise ValueError(f"actor_resources must map resource names to amounts >= 0, got {self.actor_resources!r}")
        if self.client not in ("generic", "mcp"):
            raise ValueError(f"client must be 'generic' or 'mcp', got {self.client!r}")

    @property
    def capacity(self) -> int:
        """Episodes that may run at once: every slot, capped by ``max_in_flight``."""
        slots = self.num_actors * self.sessions_per_actor
        return slots if self.max_in_flight is None else min(slots, self.max_in_flight)
