"""One episode on our env client: observations as user turns, replies as actions, step rewards and components.

Nothing here imports verifiers: the same loop serves its ``Env.run`` (:mod:`._run`), the native tool calls
(:mod:`._tools`) and a check by hand.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EpisodeResult", "parse_action", "plain", "play_episode", "record_step", "render"]

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _json_object(text: str) -> dict[str, Any] | None:
    found = _OBJECT.search(text)
    if not found:
        return None
    try:
        value = json.loads(found.group(0))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_action(reply: str, kind: str) -> dict[str, Any]:
    """The env action of a text reply under action ``kind`` (``message``, ``json`` or ``tool``).

    >>> parse_action("[crane]", "message")
    {'message': '[crane]'}
    >>> parse_action('{"tool": "echo", "arguments": {"text": "hi"}}', "tool")
    {'type': 'call_tool', 'tool_name': 'echo', 'arguments': {'text': 'hi'}}

    A ``tool`` reply without a tool name is a call of the tool named ``""`` (the env answers with its error).
    """
    if kind == "message":
        return {"message": reply}
    value = _json_object(reply)
    if kind == "tool":
        value = value or {}
        arguments = value.get("arguments")
        return {"type": "call_tool", "tool_name": str(value.get("tool") or value.get("name") or ""),
                "arguments": arguments if isinstance(arguments, dict) else {}}
    return value if value is not None else {"message": reply}


@dataclass
class EpisodeResult:
    """One played episode: the env's reward (sum of step rewards), components, turns, done."""

    reward: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    turns: int = 0
    done: bool = False
    steps: list[dict[str, Any]] = field(default_factory=list)


def plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value


def _components(observation: Any) -> dict[str, float]:
    """Rubric components an observation reports: ``info.reward_signals`` (Wordle, TextArena), ``metadata.rubric``."""
    obs = plain(observation)
    if not isinstance(obs, dict):
        return {}
    found: dict[str, Any] = {}
    info, metadata = obs.get("info"), obs.get("metadata")
    if isinstance(info, dict) and isinstance(info.get("reward_signals"), dict):
        found.update(info["reward_signals"])
    if isinstance(metadata, dict) and isinstance(metadata.get("rubric"), dict):
        found.update(metadata["rubric"])
    return {str(k): float(v) for k, v in found.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def render(observation: Any, kind: str) -> str:
    """The user turn of an observation: its prompt or last message, or (``tool``) the whole observation as JSON."""
    from ...pool import render_observation

    obs = plain(observation)
    if kind == "tool":
        return json.dumps(obs, default=str)
    return render_observation(obs)


async def play_episode(client: Any, reply: Any, *, kind: str, seed: int | None, reset: dict[str, Any],
                       max_turns: int) -> EpisodeResult:
    """Play one episode on ``client`` (our env client): ``await reply(user_text) -> (reply_text, ended)``.

    The same loop serves verifiers (``reply`` is one turn of its interaction) and a check by hand (a script).
    """
    result = await client.reset(**reset, **({"seed": seed} if seed is not None else {}))
    episode = EpisodeResult(done=bool(result.done))
    while not result.done and episode.turns < max_turns:
        text, ended = await reply(render(result.observation, kind))
        if ended:
            break
        episode.turns += 1
        action = parse_action(text, kind)
        result = await client.step(action)
        record_step(episode, action, result)
    return episode


def record_step(episode: EpisodeResult, action: dict[str, Any], result: Any) -> None:
    """Add one env step (``action`` and its ``StepResult``) to ``episode``: reward, components, done."""
    episode.steps.append({"action": action, "reward": result.reward, "done": result.done})
    episode.reward += float(result.reward or 0.0)
    episode.components = _components(result.observation) or episode.components
    episode.done = bool(result.done)
