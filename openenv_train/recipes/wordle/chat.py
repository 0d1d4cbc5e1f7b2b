"""Wordle as a chat for a small model: a compact prompt, the agent that plays it, per-game metrics.

The env's own observation repeats the whole TextArena transcript every turn; a small model learns faster from a
short chat: the model answers with the bare word (``crane``) and the next user message is its five marks
(``XYXXG``: one per letter of the guess just above it), so mark i sits a fixed distance after letter i. A game is
about 55 character tokens, and there is no system prompt unless one is configured (a pretrained model wants the
rules: ``env.system_prompt``). It reads the typed fields of our server and the transcript of OpenEnv's TextArena
server alike, so ``--env-url`` works with both.

With ``constrained=True`` each request carries ``guided_choice``: the valid-guess list less the words already
guessed, a constraint that only removes illegal replies (the policy endpoint enforces it: docs/guides/traces.md).
Nothing here looks at which words fit the feedback: the model has to work that out.

With ``order="any"`` the model writes a guess's letters in an order it picks, each followed by its position
(``r2e3s4h5f1`` is ``fresh``; ``guided_choice_order: "any"`` at the endpoint), and the next user message shows the
guess as a word before its marks (``fresh XGGGG``), so the marks line up with the letters again. The teacher
supervises the letters, never the order (SFT's games write each guess after the opening in a random order): which
letter to commit to first is left to RL.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...envs.wordle import feedback, valid_guesses
from ...envs.wordle.solver import history_from_transcript
from ...policy import encode_char_chat, read_in_order, spell_in_order
from ...trace import TraceRow

__all__ = ["ANY_ORDER_TOKENS", "FIRST_TURN", "ORDERS", "SYSTEM_PROMPT", "BranchPlan", "WordleAgent",
           "consistency_turn_rewards", "consistent", "explored_turns", "game_metrics", "prompt_ids", "read_guess",
           "render_turn", "teacher_conversation", "wordle_history", "write_guess"]

#: A system prompt for models that read instructions (``env.system_prompt``); the tiny model plays without one.
SYSTEM_PROMPT = ("Wordle: guess the secret 5-letter word in 6 tries. Reply with the word. After each guess you see "
                 "one mark per letter: G right spot, Y in the word elsewhere, X not in the word.")
FIRST_TURN = "go"
#: How the model writes a guess: ``given`` (the word), ``any`` (each letter then its position, in an order it picks).
ORDERS = ("given", "any")
#: Tokens of one ``order="any"`` reply: five letters, five positions, the end.
ANY_ORDER_TOKENS = 11
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


def render_turn(observation: Any, order: str = "given") -> str:
    """The user message for one turn: the first-turn prompt, the marks of the latest guess (after the guess as a
    word when ``order`` is ``any``), or why a guess was refused.

    >>> obs = {"guesses": ["raise"], "feedback": ["XYXXG"], "remaining_guesses": 5, "invalid_move": None}
    >>> render_turn(obs), render_turn(obs, "any")
    ('XYXXG', 'raise XYXXG')
    """
    fields = _fields(observation)
    reason = _invalid_reason(fields)
    if reason:
        return f"invalid: {reason}"
    history = wordle_history(fields)
    if not history:
        return FIRST_TURN
    return _marks_message(*history[-1], order)


def _marks_message(guess: str, marks: str, order: str) -> str:
    return f"{guess} {marks}" if order == "any" else marks


def write_guess(word: str, order: Sequence[int] | None) -> str:
    """The reply that writes ``word``: the word itself (``order`` None), else its letters in ``order`` (0-based
    positions), each followed by its 1-based position.

    >>> write_guess("fresh", None), write_guess("fresh", [1, 2, 3, 4, 0])
    ('fresh', 'r2e3s4h5f1')
    """
    return word if order is None else spell_in_order(word, order)


def read_guess(reply: str, order: str) -> str:
    """The word a reply guesses (for ``order`` ``any``, the letters put back in place; a reply not in that form is
    passed on as written, for the env to refuse)."""
    text = reply.strip()
    return (read_in_order(text, 5) or text) if order == "any" else text


def _opening(system_prompt: str | None) -> list[dict[str, str]]:
    return [{"role": "system", "content": system_prompt}] if system_prompt else []


def teacher_conversation(history: Sequence[tuple[str, str]], system_prompt: str | None = None,
                         orders: Sequence[Sequence[int]] | None = None) -> list[dict[str, str]]:
    """The chat :class:`WordleAgent` would have had with a player who made these (guess, marks) moves; with
    ``orders`` (one per guess: the 0-based positions in the order written), the chat of ``order="any"``.

    >>> [m["content"] for m in teacher_conversation([("raise", "XYXXG"), ("crane", "GGGGG")])]
    ['go', 'raise', 'XYXXG', 'crane']
    >>> [m["content"] for m in teacher_conversation([("raise", "XYXXG"), ("crane", "GGGGG")],
    ...                                             orders=[[0, 1, 2, 3, 4], [4, 0, 1, 2, 3]])]
    ['go', 'r1a2i3s4e5', 'raise XYXXG', 'e5c1r2a3n4']
    """
    order = "given" if orders is None else "any"
    messages = [*_opening(system_prompt), {"role": "user", "content": FIRST_TURN}]
    for i, (guess, marks) in enumerate(history):
        messages.append({"role": "assistant", "content": write_guess(guess, None if orders is None else orders[i])})
        if marks != "GGGGG" and i + 1 < len(history):
            messages.append({"role": "user", "content": _marks_message(guess, marks, order)})
    return messages


def prompt_ids(tokenizer: Any, history: Sequence[tuple[str, str]]) -> list[int]:
    """The token ids :class:`WordleAgent` sends a character-tokenizer model for the next guess after ``history``
    (its chat, then the assistant role token): for scoring guesses offline, without the policy endpoint."""
    messages = teacher_conversation(history)
    if history:
        messages.append({"role": "user", "content": history[-1][1]})
    return encode_char_chat(tokenizer, messages)[0] + [tokenizer.get_vocab()["<|assistant|>"]]


@functools.cache
def _sorted_guesses() -> tuple[str, ...]:
    return tuple(sorted(valid_guesses()))


@dataclass(frozen=True)
class BranchPlan:
    """Which move of a training game explores: the others decode greedily, so a group's games differ from its
    greedy game in one move each and their rewards against that game's say which moves beat the greedy ones.

    Game ``k`` of a group (episode ids ``<group>-<k>``, from a rollout whose ids start with ``prefix``) is the greedy
    reference for ``k == 0``; game ``k >= 1`` samples move ``first + (k - 1) % (moves - first)`` (0-based).

    >>> [BranchPlan(first=3).explored(f"grpo-s0-c0-g1-{k}") for k in range(5)]
    [None, 3, 4, 5, 3]
    """

    first: int
    """First move that may be explored (after a fixed opening)."""
    moves: int = 6
    """Moves of a game (Wordle's six guesses)."""
    prefix: str = "grpo-"
    """Episode id prefix of the games that branch; others (evaluations) play as asked."""

    def explored(self, episode_id: str) -> int | None:
        """The move game ``episode_id`` explores; None for a group's greedy reference game."""
        k = int(episode_id.rsplit("-", 1)[1])
        return None if k == 0 else self.first + (k - 1) % max(1, self.moves - self.first)

    def applies(self, episode_id: str) -> bool:
        """Whether ``episode_id`` is a training game that branches."""
        return episode_id.startswith(self.prefix) and episode_id.rsplit("-", 1)[-1].isdigit()


class WordleAgent:
    """Plays one game through the policy: the compact chat, the reply as the guess.

    Args:
        constrained: ask the endpoint to restrict each reply to a valid guess not made before (``guided_choice``).
        system_prompt: a first system message (none by default).
        branch: in training games, sample only the move :class:`BranchPlan` names and ask for the others greedily
            (``temperature`` 0; the endpoint must let the caller set it).
        order: ``given`` (reply: the word) or ``any`` (its letters in an order the model picks; see the module).
    """

    def __init__(self, constrained: bool = True, system_prompt: str | None = None,
                 branch: BranchPlan | None = None, order: str = "given") -> None:
        if order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
        self.constrained, self.system_prompt, self.branch, self.order = constrained, system_prompt, branch, order

    async def __call__(self, ctx: Any) -> None:
        result = await ctx.reset()
        messages: list[dict[str, Any]] = _opening(self.system_prompt)
        plan = self.branch if self.branch is not None and self.branch.applies(ctx.spec.episode_id) else None
        explored = plan.explored(ctx.spec.episode_id) if plan else None
        move = 0
        while not result.done:
            messages.append({"role": "user", "content": render_turn(result.observation, self.order)})
            extra: dict[str, Any] = {}
            if self.constrained:
                guessed = {guess for guess, _ in wordle_history(result.observation)}
                extra["guided_choice"] = [w for w in _sorted_guesses() if w not in guessed]
                if self.order == "any":
                    extra["guided_choice_order"] = "any"
            if plan and move != explored:
                extra["temperature"] = 0.0
            reply = await ctx.chat(messages, extra=extra or None)
            text = str(reply.message.get("content") or "")
            messages.append({"role": "assistant", "content": text})
            result = await ctx.step({"message": read_guess(text, self.order)})
            move += 1


def consistent(guess: str, history: Sequence[tuple[str, str]]) -> bool:
    """Whether ``guess`` could be the secret given every (guess, marks) pair so far.

    >>> consistent("crane", [("raise", "XXXXG")]), consistent("crane", [("raise", "YYXXG")])
    (False, True)
    """
    return all(feedback(g, guess) == marks for g, marks in history)


def _game(row: TraceRow) -> tuple[list[tuple[str, str]], list[int | None], bool]:
    """A game's (guess, marks) history, for each model move the index of its guess there (None: refused), and
    whether it was won."""
    moves = [s for s in row.steps if s.action]
    history: list[tuple[str, str]] = []
    for step in reversed(row.steps):
        history = wordle_history(step.observation)
        if history:
            break
    won = any(step.reward == 1.0 and step.done for step in row.steps)
    if won and (not history or history[-1][1] != "GGGGG"):  # OpenEnv's transcript gives the winning guess no marks
        final = next((str(s.action.get("message", "")) for s in reversed(moves)), "")
        history = [*history, (final.strip("[] ").lower(), "GGGGG")]
    index: list[int | None] = []
    made = 0
    for step in moves:
        valid = not _invalid_reason(step.observation) and made < len(history)
        index.append(made if valid else None)
        made += valid
    return history, index, won


def game_metrics(row: TraceRow) -> dict[str, float]:
    """Per-game numbers: ``reward`` (the env's), ``win``, ``guesses`` (valid guesses made), ``greens``/``yellows``
    of the last valid guess, ``invalid_rate`` (refused guesses per model move) and ``consistent`` (share of valid
    guesses after the first that fit all earlier marks; with fewer than two valid guesses, 1.0 for a win in one
    and 0.0 otherwise)."""
    history, index, won = _game(row)
    invalid = sum(i is None for i in index)
    marks = history[-1][1] if history else ""
    later = range(1, len(history))
    fits = sum(consistent(history[i][0], history[:i]) for i in later)
    return {"reward": float(row.reward or 0.0), "win": float(won), "guesses": float(len(history)),
            "greens": float(marks.count("G")), "yellows": float(marks.count("Y")),
            "invalid_rate": invalid / len(index) if index else 1.0,
            "consistent": fits / len(later) if len(later) else float(won)}


def consistency_turn_rewards(after: int = 0) -> Callable[[TraceRow], list[float | None]]:
    """A reward per model move (turn-level credit, see :func:`~openenv_train.integrations.trl.turn_advantages`):
    1.0 for a guess that fits every earlier mark, 0.0 for one that does not or was refused; None for the first
    ``after`` moves (e.g. a fixed opening, whose later words are not meant to fit)."""

    def rewards(row: TraceRow) -> list[float | None]:
        history, index, _ = _game(row)
        return [None if k < after else 0.0 if i is None else float(consistent(history[i][0], history[:i]))
                for k, i in enumerate(index)]

    return rewards


def explored_turns(plan: BranchPlan) -> Callable[[TraceRow], list[float | None]]:
    """Per model move of a branching game: 1.0 for the move it explored, None for the others (and for every move
    of a group's greedy reference game), for :func:`~openenv_train.integrations.trl.branch_advantages`."""

    def flags(row: TraceRow) -> list[float | None]:
        explored = plan.explored(row.episode_id) if plan.applies(row.episode_id) else None
        moves = sum(1 for s in row.steps if s.action)
        return [1.0 if k == explored else None for k in range(moves)]

    return flags
