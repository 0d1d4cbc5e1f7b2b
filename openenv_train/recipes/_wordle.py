"""Wordle as a chat for a small model: a compact prompt, the agent that plays it, per-game metrics.

The env's own observation repeats the whole TextArena transcript every turn; a small model learns faster from a
short chat: the model answers with the bare word (``crane``) and the next user message is its five marks
(``XYXXG``: one per letter of the guess just above it), so mark i sits a fixed distance after letter i. A game is
about 55 character tokens, and there is no system prompt unless one is configured (a pretrained model wants the
rules: ``env.system_prompt``). It reads the typed fields of our server and the transcript of OpenEnv's TextArena
server alike, so ``--env-url`` works with both.

With ``constrained=True`` each request carries ``guided_choice``: the valid-guess list less the words already
guessed, a constraint that only removes illegal replies (the policy endpoint enforces it; see the README). Nothing
here looks at which words fit the feedback: the model has to work that out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..envs.wordle import feedback, valid_guesses
from ..envs.wordle.solver import history_from_transcript
from ..trace import TraceRow

__all__ = ["FIRST_TURN", "SYSTEM_PROMPT", "WordleAgent", "consistent", "game_metrics", "render_turn",
           "teacher_conversation", "wordle_history"]

#: A system prompt for models that read instructions (``env.system_prompt``); the tiny model plays without one.
SYSTEM_PROMPT = ("Wordle: guess the secret 5-letter word in 6 tries. Reply with the word. After each guess you see "
                 "one mark per letter: G right spot, Y in the word elsewhere, X not in the word.")
FIRST_TURN = "go"
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
    """The user message for one turn: the first-turn prompt, the marks of the latest guess, or why a guess was
    refused.

    >>> render_turn({"guesses": ["raise"], "feedback": ["XYXXG"], "remaining_guesses": 5, "invalid_move": None})
    'XYXXG'
    """
    fields = _fields(observation)
    reason = _invalid_reason(fields)
    if reason:
        return f"invalid: {reason}"
    history = wordle_history(fields)
    if not history:
        return FIRST_TURN
    return history[-1][1]


def _opening(system_prompt: str | None) -> list[dict[str, str]]:
    return [{"role": "system", "content": system_prompt}] if system_prompt else []


def teacher_conversation(history: Sequence[tuple[str, str]], system_prompt: str | None = None) -> list[dict[str, str]]:
    """The chat :class:`WordleAgent` would have had with a player who made these (guess, marks) moves.

    >>> [m["content"] for m in teacher_conversation([("raise", "XYXXG"), ("crane", "GGGGG")])]
    ['go', 'raise', 'XYXXG', 'crane']
    """
    messages = [*_opening(system_prompt), {"role": "user", "content": FIRST_TURN}]
    for i, (guess, marks) in enumerate(history):
        messages.append({"role": "assistant", "content": guess})
        if marks != "GGGGG" and i + 1 < len(history):
            messages.append({"role": "user", "content": marks})
    return messages


@functools.cache
def _sorted_guesses() -> tuple[str, ...]:
    return tuple(sorted(valid_guesses()))


class WordleAgent:
    """Plays one game through the policy: the compact chat, the reply as the guess.

    Args:
        constrained: ask the endpoint to restrict each reply to a valid guess not made before (``guided_choice``).
        system_prompt: a first system message (none by default).
    """

    def __init__(self, constrained: bool = True, system_prompt: str | None = None) -> None:
        self.constrained, self.system_prompt = constrained, system_prompt

    async def __call__(self, ctx: Any) -> None:
        result = await ctx.reset()
        messages: list[dict[str, Any]] = _opening(self.system_prompt)
        while not result.done:
            messages.append({"role": "user", "content": render_turn(result.observation)})
            extra = None
            if self.constrained:
                guessed = {guess for guess, _ in wordle_history(result.observation)}
                extra = {"guided_choice": [w for w in _sorted_guesses() if w not in guessed]}
            reply = await ctx.chat(messages, extra=extra)
            text = str(reply.message.get("content") or "")
            messages.append({"role": "assistant", "content": text})
            result = await ctx.step({"message": text})


def consistent(guess: str, history: Sequence[tuple[str, str]]) -> bool:
    """Whether ``guess`` could be the secret given every (guess, marks) pair so far.

    >>> consistent("crane", [("raise", "XXXXG")]), consistent("crane", [("raise", "YYXXG")])
    (False, True)
    """
    return all(feedback(g, guess) == marks for g, marks in history)


def game_metrics(row: TraceRow) -> dict[str, float]:
    """Per-game numbers: ``reward`` (the env's), ``win``, ``guesses`` (valid guesses made), ``greens``/``yellows``
    of the last valid guess, ``invalid_rate`` (refused guesses per model move) and ``consistent`` (share of valid
    guesses after the first that fit all earlier marks; with fewer than two valid guesses, 1.0 for a win in one
    and 0.0 otherwise)."""
    moves = [s for s in row.steps if s.action]
    invalid = sum(1 for s in moves if _invalid_reason(s.observation))
    history: list[tuple[str, str]] = []
    for step in reversed(row.steps):
        history = wordle_history(step.observation)
        if history:
            break
    won = any(step.reward == 1.0 and step.done for step in row.steps)
    if won and (not history or history[-1][1] != "GGGGG"):  # OpenEnv's transcript gives the winning guess no marks
        final = next((str(s.action.get("message", "")) for s in reversed(moves)), "")
        history = [*history, (final.strip("[] ").lower(), "GGGGG")]
    marks = history[-1][1] if history else ""
    later = range(1, len(history))
    fits = sum(consistent(history[i][0], history[:i]) for i in later)
    return {"reward": float(row.reward or 0.0), "win": float(won), "guesses": float(len(history)),
            "greens": float(marks.count("G")), "yellows": float(marks.count("Y")),
            "invalid_rate": invalid / len(moves) if moves else 1.0,
            "consistent": fits / len(later) if len(later) else float(won)}
