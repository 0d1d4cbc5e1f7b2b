"""Our checks beside OpenEnv's at each ``validate --level``, named ``ours.*``: reported, never in the verdict.

OpenEnv 0.10's levels grade a folder only through its ``validation:`` block (``_validation_run``); a folder
without one gets SKIPs (a WARN verdict) and no word on whether it serves. Ours say that: at ``static``, the
folder checks of plain ``validate`` (layout, manifest fields, entry point, imports, schemas); from ``runtime``,
the folder's server started and driven (HTTP routes, a ``/ws`` session, error codes); at ``semantic``, two
seeded episodes of the same actions replayed (``ours.replayability``) and their rewards finite or null
(``ours.reward_finite``). With ``--url``, OpenEnv's six runtime criteria decide, and ours add the ``/ws`` checks.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["ours_results", "replay_episode", "well_formed"]


def replay_episode(ws_url: str, actions: list[Any], *, seed: int, timeout_s: float) -> list[tuple[Any, Any, Any]]:
    """Reset with ``seed`` and send ``actions`` on a fresh ``/ws`` session: ``(observation, reward, done)`` each."""
    from websockets.sync.client import connect

    frames = []
    with connect(ws_url, open_timeout=timeout_s, close_timeout=timeout_s, max_size=2**24) as ws:
        for message in [{"type": "reset", "data": {"seed": seed}}] + [{"type": "step", "data": a} for a in actions]:
            ws.send(json.dumps(message))
            reply = json.loads(ws.recv(timeout=timeout_s))
            data = reply.get("data", {}) if isinstance(reply, dict) else {}
            if reply.get("type") != "observation":
                frames.append((reply, None, None))
                break
            observation = {k: v for k, v in (data.get("observation") or {}).items() if k not in ("metadata",)}
            frames.append((observation, data.get("reward"), data.get("done")))
            if data.get("done"):
                break
    return frames


def well_formed(reward: Any) -> bool:
    """A reward is a finite number or null."""
    return reward is None or (isinstance(reward, int | float) and not isinstance(reward, bool) and math.isfinite(reward))


def ours_results(checks: list[Any]) -> list[dict[str, Any]]:
    """Our :class:`~openenv_train.cli._validate.Check` list in OpenEnv's result shape, ids prefixed ``ours.``."""
    return [{"check_id": f"ours.{c.id}", "status": "pass" if c.passed else "fail",
             "evidence": [c.description] + ([f"at: {c.where}"] if not c.passed else [])
             + ([f"got: {c.details}"] if c.details else []), "remediation": c.fix or None} for c in checks]
