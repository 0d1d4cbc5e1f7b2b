"""Which held-out Wordle words training never showed the model at all: neither as a secret, a guess nor a target.

A held-out word is never a secret in training, but it can still be trained on: as a target of the teacher's
distribution (SFT's targets after the fixed opening are every answer that fits the marks so far, so a held-out word
is one whenever an SFT secret gives the same marks to the opening), or as a guess the model made in a GRPO game.
The win rate on the words that were none of these is the honest figure for generalisation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...envs.wordle import feedback
from .chat import wordle_history

__all__ = ["guessed_words", "unseen_held_out", "unseen_words"]


def unseen_words(held: Sequence[str], sft_secrets: Iterable[str], opening: Sequence[str],
                 guessed: Iterable[str] = ()) -> list[str]:
    """The words of ``held`` that were no SFT secret's opening-pattern mate (never a teacher target), no opening
    word and not in ``guessed``; in ``held``'s order. Without an opening every answer can be a target: none.

    >>> unseen_words(["crane", "pious"], ["drape"], ["stale"])  # drape and crane: XXGXG against stale
    ['pious']
    """
    if not opening:
        return []

    def pattern(word: str) -> tuple[str, ...]:
        return tuple(feedback(o, word) for o in opening)

    taught = {pattern(s) for s in set(sft_secrets)}
    skip = set(opening) | set(guessed)
    return [w for w in held if w not in skip and pattern(w) not in taught]


def guessed_words(rows: Iterable[Any]) -> set[str]:
    """Every valid guess made in the games of ``rows`` (TraceRows)."""
    words: set[str] = set()
    for row in rows:
        for step in reversed(row.steps):
            history = wordle_history(step.observation)
            if history:
                words.update(guess for guess, _ in history)
                break
    return words


def unseen_held_out(out: Path, held: Sequence[str], sft_secrets: Sequence[str], opening: Sequence[str],
                    evals: Mapping[str, Any], *, resamples: int, seed: int) -> dict[str, Any]:
    """Win rates on the held-out words that no training game of the run in ``out`` showed at all (no secret, guess
    or target), per evaluation, and the SFT -> GRPO paired difference on them."""
    from ...trace import iter_traces
    from .._stats import bootstrap_ci, paired_difference

    grpo_rows = (r for r in iter_traces(out) if r.episode_id.startswith("grpo-"))
    words = unseen_words(held, sft_secrets, opening, guessed_words(grpo_rows))
    at = [held.index(w) for w in words]
    kw = {"resamples": resamples, "seed": seed}
    wins = {p: [r["per_task"]["win"][i] for i in at] for p, r in evals.items()}
    result: dict[str, Any] = {"words": len(words), "win": {p: bootstrap_ci(w, **kw) for p, w in wins.items() if w}}
    if words and "sft" in wins and "grpo" in wins:
        result["sft->grpo"] = paired_difference(wins["grpo"], wins["sft"], **kw)
    return result
