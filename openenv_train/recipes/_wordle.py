"""Wordle as a chat for a small model: a compact prompt, the expert's replies in that chat, per-game metrics.

The env's own observation repeats the whole TextArena transcript every turn; a small model learns faster
from one short line per guess (``raise GYXXG (5 left)``), so the agent renders that. It reads the typed
fields of our server and the transcript of OpenEnv's TextArena server alike, so ``--env-url`` works with both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..envs.wordle import WordleSolver
from ..envs.wordle.solver import history_from_transcript
from ..pool import TextAgent
from ..trace import TraceRow

__all__ = ["SYSTEM_PROMPT", "expert_reply", "game_metrics", "render_turn", "wordle_agent", "wordle_history"]

SYSTEM_PROMPT = (
    "You are playing Wordle: find the secret 5-letter word in 6 guesses. Reply with one guess in brackets, "
    "like [crane]. After each guess you see it with one mark per letter: G right spot, Y in the word but "
    "elsewhere, X not in the word."
)
FIRST_TURN = "Make your first guess."
_FEEDBACK = re.compile(r"^([a-z]{5}) ([GYX]{5})\b")
_INVALID = re.compile(r"invalid move\.?\s*(?:Reason:\s*)?(.*)", re.IGNORECASE | re.DOTALL)


def _fields(observation: Any) -> Mapping[str, Any]:
    return observation if isinstance(observation, Mapping) else vars(observation)


def _transcript(fields: Mapping[str, Any]) -> str:
    return "\n".join(str(m.get("content", "") if isinstance(m, Mapping) else getattr(m, "content", ""))
                     for m in fields.get("messages") or [])


def wordle_history(observation: Any) -> list[tuple[str, str]]:
    """(guess, marks) pairs so far: the typed fields of our server, else OpenEnv's transcript.

    >>> wordle_history({"guesses": ["raise"], "feedback": ["XYXXG"]})
    [('raise', 'XYXXG')]
    """
    fields = _fields(observation)
    if "guesses" in fields:
        return list(zip(fields["guesses"] or [], fields.get("feedback") or [], strict=False))
    return history_from_transcript(_transcript(fields))


def _invalid_reason(fields: Mapping[str, Any]) -> str | None:
    if "invalid_move" in fields:
        return fields["invalid_move"] or None
    last = _transcript(fields).rsplit("[GAME]", 1)[-1]
    found = _INVALID.search(last)
    return found.group(1).strip() or "invalid move" if found else None


def render_turn(observation: Any) -> str:
    """The user message for one turn: the first-guess prompt, the latest feedback, or why a guess was refused.

    >>> render_turn({"guesses": ["raise"], "feedback": ["XYXXG"], "remaining_guesses": 5, "invalid_move": None})
    'raise XYXXG (5 left)'
    """
    fields = _fields(observation)
    reason = _invalid_reason(fields)
    if reason:
        return f"Invalid guess: {reason} Guess again."
    history = wordle_history(fields)
    if not history:
        return FIRST_TURN
    guess, marks = history[-1]
    left = fields.get("remaining_guesses", 6 - len(history))
    return f"{guess} {marks} ({left} left)"


def wordle_agent() -> TextAgent:
    """The agent loop of the recipe: system prompt, :func:`render_turn` messages, the reply as the guess."""
    return TextAgent(render=render_turn, system_prompt=SYSTEM_PROMPT)


def _chat_history(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    history = []
    for message in messages:
        if message.get("role") == "user":
            found = _FEEDBACK.match(str(message.get("content") or ""))
            if found:
                history.append((found.group(1), found.group(2)))
    return history


_SOLVER: WordleSolver | None = None


def expert_reply(messages: Sequence[Mapping[str, Any]]) -> str:
    """The scripted expert's reply to a conversation written by :func:`wordle_agent` (``[raise]`` first).

    >>> expert_reply([{"role": "user", "content": FIRST_TURN}])
    '[raise]'
    """
    global _SOLVER
    if _SOLVER is None:
        _SOLVER = WordleSolver()
    return f"[{_SOLVER.next_guess(_chat_history(messages))}]"


def game_metrics(row: TraceRow) -> dict[str, float]:
    """Per-game numbers: ``reward`` (the env's), ``win``, ``greens``/``yellows`` of the last valid guess, and
    ``invalid_rate`` (refused guesses per model move)."""
    moves = [s for s in row.steps if s.action]
    invalid = sum(1 for s in moves if _invalid_reason(s.observation))
    history: list[tuple[str, str]] = []
    for step in reversed(row.steps):
        history = wordle_history(step.observation)
        if history:
            break
    marks = history[-1][1] if history else ""
    won = any(step.reward == 1.0 and step.done for step in row.steps)
    if won and not marks.count("G") == 5:  # OpenEnv's transcript gives the winning guess no feedback line
        marks = "GGGGG"
    return {"reward": float(row.reward or 0.0), "win": float(won), "greens": float(marks.count("G")),
            "yellows": float(marks.count("Y")), "invalid_rate": invalid / len(moves) if moves else 1.0,
            "guesses": float(len(history)) if history else 0.0}
