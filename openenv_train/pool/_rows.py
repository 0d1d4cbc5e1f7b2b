"""Build the TraceRow of a finished episode from its spec, its final attempt and its captured turns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..trace import EnvInfo, EnvStep, ErrorInfo, PolicyInfo, TraceRow, TrainingTrace
from ._episode import EpisodeSpec

__all__ = ["Job", "build_row"]


@dataclass
class Job:
    """An episode's place in the pool: its spec, input index, attempt number and where it runs."""

    spec: EpisodeSpec
    index: int
    attempt: int = 0
    version: int | None = None
    actor: int | None = None
    capture_session: str | None = None
    server: str | None = None
    """The fleet server of the attempt in flight."""
    dispatched_at: float = 0.0
    not_before: float = 0.0
    deadline: float = 0.0
    unavailable: int = 0
    """Attempts that met an actor Ray was restarting: they never ran, so they do not use the retry budget."""
    incarnation: str | None = None
    """``write="actors"``: the incarnation of the actor the driver knew of when it sent the attempt."""

    @property
    def retries_used(self) -> int:
        """Attempts after the first that count against ``max_retries``."""
        return self.attempt - self.unavailable


def build_row(job: Job, outcome: dict[str, Any], *, run_id: str, env: str, model: str | None,
              trace: TrainingTrace | None, error: dict[str, str] | None = None) -> TraceRow:
    """The dataset row of ``job``: ok unless ``outcome`` failed or ``error`` is given."""
    error = error or outcome.get("error")
    ok = error is None and outcome.get("status") == "ok"
    if not ok and error is None:
        error = {"type": "EpisodeFailed", "message": f"status {outcome.get('status')!r}"}
    turns = trace.turns if trace is not None else []
    exact = all(t.completion_token_ids for t in turns)
    reward = outcome.get("reward")
    timings = {k: float(v) for k, v in (outcome.get("timings") or {}).items()}
    timings["attempts"] = float(job.attempt + 1)
    return TraceRow(
        run_id=run_id,
        episode_id=job.spec.episode_id,
        group_id=job.spec.group_id,
        env=EnvInfo(name=env, url=outcome.get("url")),
        task={**job.spec.task, **({"seed": job.spec.seed} if job.spec.seed is not None else {})},
        policy=PolicyInfo(model=model, version=job.version),
        reward=reward,
        rewards={"env": reward} if reward is not None else {},
        done=bool(outcome.get("done")),
        truncated=bool(outcome.get("truncated")),
        ok=ok,
        error=ErrorInfo(**error) if error is not None and not ok else None,
        steps=[EnvStep(**s) for s in outcome.get("steps") or []],
        trace=trace or TrainingTrace(),
        rollout_type="train" if exact else "eval",
        timings=timings,
    )
