"""A pool over a weighted mix of envs: each env its own actors and servers, episodes routed by the env they name.

A mix is its own form (:class:`MixEnv` entries given to :class:`MixedPool`), apart from a fleet (a list of URLs
given to :class:`RolloutPool`, all serving one env). An episode names its env under the task key :data:`MIX_KEY`
(``{"env": "catch", "seed": 3}``); the pool adds that env's own reset options under the task's and plays it on
that env's servers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..trace import CaptureStore, TraceRow, TraceWriter
from ._agents import AgentLoop
from ._config import PoolConfig
from ._episode import EpisodeSpec
from ._metrics import PoolMetrics
from ._mixing import MIX_KEY, MixEnv, MixEnvFailed
from ._pool import RolloutPool

__all__ = ["MixedPool", "env_config"]


def env_config(base: PoolConfig, env: MixEnv) -> PoolConfig:
    """The pool config of one env of a mix: ``base`` with the env's turn limit, its request fields (per-call
    ``max_tokens``, constraints) over ``base.sampling``, its sandbox setting, and no progress bar of its own.

    >>> cfg = env_config(PoolConfig(sampling={"top_p": 0.9}), MixEnv("a", "catch", max_turns=3, max_tokens=8))
    >>> cfg.max_turns, cfg.sampling
    (3, {'top_p': 0.9, 'max_tokens': 8})
    """
    return dataclasses.replace(base, max_turns=env.max_turns or base.max_turns,
                               sampling={**base.sampling, **env.request_fields()},
                               sandbox=base.sandbox if env.sandbox is None else env.sandbox, show_progress=False)

class MixedPool:
    """One pool over several envs: a :class:`RolloutPool` per env (its own actors and servers) behind one
    ``run``; rows come back in the order asked, each env's retries and failures are its pool's.

    Args:
        envs: the mix (distinct names).
        policy, agent, writer, capture: as :class:`RolloutPool`'s, shared by every env.
        agents: an agent loop per env name, where one needs its own (default the env's ``agent``, else ``agent``).
        config: each env's pool config (``num_actors`` and ``sessions_per_actor`` are per env); ``run_id`` is
            shared, so the writer keys every row of the mix alike.

    Example::

        mix = [MixEnv("catch", "catch"), MixEnv("blackjack", "blackjack", weight=2)]
        with MixedPool(mix, policy=lambda obs: {"action_id": obs["legal_actions"][0]}, num_actors=1) as pool:
            rows = pool.run(make_groups([{"env": "catch", "seed": 1}, {"env": "blackjack", "seed": 2}], 2))
    """

    def __init__(self, envs: Sequence[MixEnv], policy: str | Callable[..., Any], *, agent: AgentLoop | None = None,
                 agents: Mapping[str, AgentLoop] | None = None, config: PoolConfig | None = None,
                 writer: TraceWriter | None = None, capture: CaptureStore | None = None, **overrides: Any) -> None:
        names = [e.name for e in envs]
        if not envs or len(set(names)) != len(names):
            raise ValueError(f"a mix needs at least one env and distinct names; got {names}")
        base = dataclasses.replace(config or PoolConfig(), **overrides)
        if not base.run_id:
            base = dataclasses.replace(base, run_id=uuid.uuid4().hex[:12])  # one run id for every env's rows
        self.config, self.envs = base, {e.name: e for e in envs}
        self.writer = writer
        self.pools: dict[str, RolloutPool] = {}
        for e in envs:
            self.pools[e.name] = RolloutPool(e.env, policy, agent=(agents or {}).get(e.name) or e.agent or agent,
                                             config=env_config(base, e), writer=writer, capture=capture)
        self.run_id = base.run_id
        self._env_of: dict[str, str] = {}
        self._started: list[str] = []

    @property
    def metrics(self) -> dict[str, PoolMetrics]:
        """Each env's pool metrics (episodes, failures, retries, ...)."""
        return {name: pool.metrics for name, pool in self.pools.items()}

    def env_of(self, row_or_id: TraceRow | str) -> str:
        """The mix name of the env that played an episode (a row or its episode id) of this pool."""
        key = row_or_id if isinstance(row_or_id, str) else row_or_id.episode_id
        return self._env_of[key]

    def start(self) -> MixedPool:
        """Start every env's pool, one after the other; the first that fails stops the others.

        Raises:
            MixEnvFailed: naming the env that did not start.
        """
        for name, pool in self.pools.items():
            if name in self._started:
                continue
            try:
                pool.start()
            except Exception as exc:
                self.close()
                raise MixEnvFailed(name, exc) from exc
            self._started.append(name)
        return self

    def close(self) -> None:
        """Stop every env's pool, the last started first (the first one may own the Ray it started)."""
        for name in reversed(list(self.pools)):
            with contextlib.suppress(Exception):
                self.pools[name].close()

    def __enter__(self) -> MixedPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_policy_version(self, version: int) -> None:
        """The version of the weights now served, for every env's episodes."""
        for pool in self.pools.values():
            pool.set_policy_version(version)

    def route(self, spec: EpisodeSpec) -> tuple[str, EpisodeSpec]:
        """The env of ``spec`` (its task's :data:`MIX_KEY`) and the spec its pool plays: the env's reset options
        under the task's own, the key taken out.

        Raises:
            ValueError: the task names no env of the mix.
        """
        task = dict(spec.task)
        name = task.pop(MIX_KEY, None)
        if name not in self.pools:
            raise ValueError(f"episode {spec.episode_id!r} names env {name!r}, not one of the mix "
                             f"({', '.join(self.pools)}): give each task an {MIX_KEY!r} key")
        options = {**self.envs[name].options, **task}
        return name, dataclasses.replace(spec, task=options)

    def run(self, specs: Iterable[EpisodeSpec], *, ordered: bool = True, include_written: bool = False) -> list[TraceRow]:
        """Play a batch over the envs it names, side by side; rows in input order (``ordered``). Episodes already
        written (a resumed run) are left out, or read back with ``include_written``."""
        specs = list(specs)
        self.start()
        routed: dict[str, list[EpisodeSpec]] = {}
        for spec in specs:
            name, played = self.route(spec)
            self._env_of[spec.episode_id] = name
            routed.setdefault(name, []).append(played)
        rows: list[TraceRow] = []
        busy = []
        for name, batch in routed.items():
            pool = self.pools[name]
            if pool.metrics.episodes == 0 and not pool.pending:
                pool.metrics.started_at = time.perf_counter()
            for spec in batch:
                pool.submit(spec)
            busy.append(pool)
        while busy:
            for pool in busy:
                rows += pool.poll()
            busy = [pool for pool in busy if pool.pending]
        if include_written and len(rows) < len(specs):
            missing = {s.episode_id for s in specs} - {r.episode_id for r in rows}
            for name, batch in routed.items():
                wanted = missing & {s.episode_id for s in batch}
                if wanted:
                    rows += self.pools[name].read_written(wanted)
        if ordered:
            order = {s.episode_id: i for i, s in enumerate(specs)}
            rows.sort(key=lambda r: order[r.episode_id])
        return rows
