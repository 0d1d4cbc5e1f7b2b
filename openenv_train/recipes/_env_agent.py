"""An agent that plays any catalog env in text, restricted to the env's legal actions where it publishes them.

Each observation becomes one user message: the env's own text rendering (OpenSpiel's ``info_string``, a grid's
``text``, a ``prompt``, a ``question`` or the last message), else its fields as JSON. Where the observation lists
``legal_actions`` (the OpenSpiel-style games: catch, tic_tac_toe, connect4, kuhn_poker, blackjack, ...), the
reply is restricted to them by the policy endpoint's ``guided_choice`` and played as ``{"action_id": N}``, as the
Wordle recipe restricts its replies to valid guesses; otherwise the reply is the action: its JSON object for typed
envs, the text itself for text envs (under ``message``, or the field the agent is given: ``answer``, ``command``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["HISTORIES", "ActionAgent", "json_action", "observation_text"]

#: What each prompt holds (:class:`ActionAgent`'s ``history``).
HISTORIES = ("all", "current")
#: Observation fields that are the env's own text rendering, in the order they are looked for.
TEXT_FIELDS = ("info_string", "text", "prompt", "board", "question")
#: Fields left out of the JSON rendering: bookkeeping, not what a player sees.
_SKIPPED = {"done", "reward", "metadata", "legal_actions", "info_state", "game_phase", "current_player_id"}

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def json_action(text: str, field: str = "message") -> dict[str, Any]:
    """A typed env's action from a reply: its JSON object, else the text as ``field`` (``message``: text games).

    >>> json_action('move: {"direction": "up"}'), json_action("hello"), json_action("42", "answer")
    ({'direction': 'up'}, {'message': 'hello'}, {'answer': '42'})
    """
    found = _OBJECT.search(text)
    if found:
        try:
            value = json.loads(found.group(0))
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    return {field: text}


def _fields(observation: Any) -> Mapping[str, Any]:
    if isinstance(observation, Mapping):
        return observation
    dump = getattr(observation, "model_dump", None)
    return dump() if callable(dump) else vars(observation)


def observation_text(observation: Any) -> str:
    """The text a model reads for one observation (see the module docstring); a refused action's message first.

    >>> observation_text({"info_string": "..x\\n...", "legal_actions": [0, 1], "message": ""})
    '..x\\n...'
    >>> observation_text({"position": 3, "done": False})
    '{"position":3}'
    """
    fields = _fields(observation)
    note = str(fields.get("message") or "") if fields.get("illegal_action") else ""
    for name in TEXT_FIELDS:
        value = fields.get(name)
        if isinstance(value, str) and value:
            return f"{note}\n{value}" if note else value
    messages = fields.get("messages") or []
    if messages and isinstance(messages[-1], Mapping) and messages[-1].get("content"):
        return str(messages[-1]["content"])
    return json.dumps({k: v for k, v in fields.items() if k not in _SKIPPED}, default=str, separators=(",", ":"))


class ActionAgent:
    """Plays one episode through a chat policy: observation text in, action out (see the module docstring).

    Args:
        parser: reply text -> action, for envs that publish no legal actions (default: a JSON object in the reply,
            else ``{reply_field: text}``).
        constrained: restrict replies to the published legal actions (``guided_choice``).
        system_prompt: a first system message (none by default: the tiny model plays without one).
        history: ``all``: the conversation grows by each observation and reply; ``current``: each prompt is the
            current observation alone (after the system message), for envs whose observation is the whole state.
        reply_field: the action field a plain-text reply fills under the default parser (``message`` for the text
            games, ``answer`` for reasoning_gym, ``command`` for a Harbor task folder).
    """

    def __init__(self, parser: Callable[[str], Any] | None = None, *, constrained: bool = True,
                 system_prompt: str | None = None, history: str = "all", reply_field: str = "message") -> None:
        if history not in HISTORIES:
            raise ValueError(f"history must be one of {', '.join(HISTORIES)}, got {history!r}")
        self.parser = parser or (lambda text: json_action(text, reply_field))
        self.constrained, self.system_prompt, self.history = constrained, system_prompt, history

    async def __call__(self, ctx: Any) -> None:
        result = await ctx.reset()
        first: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages = list(first)
        while not result.done:
            if self.history == "current":
                messages = list(first)
            fields = _fields(result.observation)
            legal = [int(a) for a in fields.get("legal_actions") or []]
            messages.append({"role": "user", "content": observation_text(fields)})
            extra = {"guided_choice": [str(a) for a in legal]} if legal and self.constrained else None
            reply = await ctx.chat(messages, extra=extra)
            text = str(reply.message.get("content") or "")
            messages.append({"role": "assistant", "content": text})
            number = text.strip()
            action = {"action_id": int(number)} if legal and number.lstrip("-").isdigit() else self.parser(text)
            result = await ctx.step(action)
