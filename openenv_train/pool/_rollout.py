"""Run one episode attempt under a timeout and classify how it ended (ok, failed, or worth a retry)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..core import CapacityError, ClientError, ServerStartError
from ._agents import AgentLoop
from ._context import EpisodeContext, Truncated
from ._policy import PolicyUnavailable

__all__ = ["INFRA_ERRORS", "POLICY_RETRIED", "Outcome", "run_attempt"]

#: Failures of the env's side (session, connection, server): the client is replaced and the episode retried.
INFRA_ERRORS: tuple[type[BaseException], ...] = (ClientError, ServerStartError, CapacityError, ConnectionError)
#: Failures of the policy's side that a retry may get past (a 503: e.g. its engine process was replaced).
POLICY_RETRIED: tuple[type[BaseException], ...] = (PolicyUnavailable,)

#: What an actor returns for one attempt: ``status`` is "ok", "failed" (a row with ok=False) or "retry".
Outcome = dict[str, Any]


def _error(exc: BaseException) -> dict[str, str]:
    return {"type": type(exc).__name__, "message": str(exc) or repr(exc)}


async def run_attempt(agent: AgentLoop, ctx: EpisodeContext, *, timeout_s: float, retry_timeouts: bool) -> Outcome:
    """Play ``ctx``'s episode with ``agent``; never raises for an episode's own failure.

    Returns:
        The outcome: status, steps, reward, done, truncated, error, timings and counters.
    """
    start = time.perf_counter()
    status, error = "ok", None
    try:
        await asyncio.wait_for(agent(ctx), timeout_s)
    except Truncated:
        ctx.truncated = True
    except TimeoutError:
        status = "retry" if retry_timeouts else "failed"
        error = {"type": "EpisodeTimeout", "message": f"the episode ran past episode_timeout_s={timeout_s:g}s "
                 f"after {len(ctx.steps)} steps; raise episode_timeout_s or lower max_turns"}
    except (*INFRA_ERRORS, *POLICY_RETRIED) as exc:
        status, error = "retry", _error(exc)
    except Exception as exc:  # the agent or policy broke on this episode: a failed row, not a crash
        status, error = "failed", _error(exc)
    ctx.timings["total_s"] = time.perf_counter() - start
    return {
        "status": status,
        "error": error,
        "steps": ctx.steps,
        "reward": ctx.reward(),
        "done": ctx.done,
        "truncated": ctx.truncated,
        "timings": dict(ctx.timings),
        "turns": ctx.turns,
        "model_calls": ctx.model_calls,
        "completion_tokens": ctx.completion_tokens,
    }
