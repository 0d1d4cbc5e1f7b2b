"""Live metrics of a pool: throughput, latencies, failures and retries; a rich summary table."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PoolMetrics"]


@dataclass
class PoolMetrics:
    """Counters and latency sums, updated by the pool as episodes settle."""

    started_at: float = field(default_factory=time.perf_counter)
    episodes: int = 0
    ok: int = 0
    failed: int = 0
    truncated: int = 0
    retries: int = 0
    actor_failures: int = 0
    stale_reruns: int = 0
    skipped: int = 0
    env_steps: int = 0
    env_step_s: float = 0.0
    model_calls: int = 0
    model_s: float = 0.0
    episode_s: float = 0.0
    server_restarts: dict[tuple[int, int | None], int] = field(default_factory=dict)
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Fleets: per-server load, health and counts, by URL (see ``ServerStats``)."""
    last_at: float | None = None

    def record(self, outcome: dict[str, Any], *, ok: bool, actor: int | None) -> None:
        """Count one finished episode (its final attempt)."""
        self.episodes += 1
        self.last_at = time.perf_counter()
        self.ok += ok
        self.failed += not ok
        self.truncated += bool(outcome.get("truncated"))
        self.add_attempt(outcome, actor)

    def add_attempt(self, outcome: dict[str, Any], actor: int | None) -> None:
        """Add an attempt's latencies (every attempt, kept or retried)."""
        timings = outcome.get("timings") or {}
        self.env_steps += int(outcome.get("env_steps") or len(outcome.get("steps") or []))  # write="actors": a count
        self.env_step_s += timings.get("env_step_s", 0.0)
        self.model_calls += int(outcome.get("model_calls") or 0)
        self.model_s += timings.get("model_s", 0.0)
        self.episode_s += timings.get("total_s", 0.0)
        if actor is not None and "server_restarts" in outcome:
            # an actor's count starts again at 0 when Ray restarts it: one count per incarnation (process)
            self.server_restarts[(actor, outcome.get("actor_pid"))] = int(outcome["server_restarts"])

    @property
    def elapsed_s(self) -> float:
        """Seconds from the first dispatch to the latest finished episode (or now, before any)."""
        return (self.last_at or time.perf_counter()) - self.started_at

    @property
    def episodes_per_s(self) -> float:
        return self.episodes / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        """Plain numbers: counts, rates and mean latencies (ms); a fleet's per-server figures (``servers``)."""
        return {
            "episodes": self.episodes, "ok": self.ok, "failed": self.failed, "truncated": self.truncated,
            "retries": self.retries, "actor_failures": self.actor_failures, "stale_reruns": self.stale_reruns,
            "skipped": self.skipped, "server_restarts": sum(self.server_restarts.values()),
            "elapsed_s": round(self.elapsed_s, 3), "episodes_per_s": round(self.episodes_per_s, 3),
            "env_step_ms": round(1000 * self.env_step_s / self.env_steps, 3) if self.env_steps else None,
            "model_ms": round(1000 * self.model_s / self.model_calls, 3) if self.model_calls else None,
            **({"servers": self.servers} if self.servers else {}),  # a fleet: per-server load, episodes, outages
        }

    def line(self) -> str:
        """One short status line for a progress bar."""
        s = self.summary()
        return (f"{s['episodes_per_s']:.1f} ep/s · step {s['env_step_ms'] or 0:.1f} ms · model {s['model_ms'] or 0:.1f} ms"
                f" · failed {s['failed']} · retries {s['retries']}")

    def table(self) -> Any:
        """The summary as a rich Table."""
        from rich.table import Table

        table = Table("metric", "value", title="rollout pool")
        for key, value in self.summary().items():
            table.add_row(key, "-" if value is None else str(value))
        return table
