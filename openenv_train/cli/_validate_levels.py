"""``validate --level`` and ``--policy``: OpenEnv's validation levels and severity policies over our checks.

Levels, as OpenEnv 0.10 defines them: ``static`` reads the folder (layout, manifest, entry points, imports,
schemas); ``runtime`` also starts a real server of it and drives it (HTTP routes and a ``/ws`` session);
``semantic`` also grades the env's contract: replayability (the same seed and actions give the same
observations and rewards) and well-formed rewards (finite numbers or null). A severity policy version says which
failed checks fail the run and which only warn, as OpenEnv's ``severity-v1``/``v2`` do.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["LEVELS", "POLICIES", "level_index", "replay_episode", "severities"]

#: The levels in order; each runs the ones before it.
LEVELS = ("static", "runtime", "semantic")

_WARN_V1 = frozenset({"layout", "models_classes", "client_classes", "dependencies"})
#: Severity policy versions: the check ids whose failure only warns (every other failed check fails the run).
#: v2 is OpenEnv's second version: a server that does not start fails (``startup``), as v1's runtime checks
#: did too; the layout still warns (OpenEnv's ``static.layout``).
POLICIES: dict[str, frozenset[str]] = {"v1": _WARN_V1, "v2": _WARN_V1 - {"dependencies"}}


def level_index(level: str) -> int:
    """The level's place in :data:`LEVELS`.

    Raises:
        ValueError: an unknown level (the message lists the known ones).
    """
    try:
        return LEVELS.index(level.lower())
    except ValueError:
        raise ValueError(f"unknown level {level!r}; use one of: {', '.join(LEVELS)}") from None


def severities(check_ids: list[str], policy: str | None) -> dict[str, str]:
    """``fail`` or ``warn`` for each check id under ``policy`` (None: every check fails the run, as before).

    Raises:
        ValueError: an unknown policy version (the message lists the known ones).
    """
    if policy is None:
        return dict.fromkeys(check_ids, "fail")
    if policy not in POLICIES:
        raise ValueError(f"unknown severity policy {policy!r}; use one of: {', '.join(POLICIES)}")
    warn = POLICIES[policy]
    return {check_id: "warn" if check_id in warn else "fail" for check_id in check_ids}


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
