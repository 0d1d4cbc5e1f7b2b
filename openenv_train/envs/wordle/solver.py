"""A scripted expert for Wordle: keeps the secrets consistent with the feedback and splits them best.

The training recipe uses it to write warm-start (SFT) games and as a reference policy. It opens
with ``raise``; after that it scores the remaining candidates plus a few high-coverage probe words
by the expected number of candidates left after the guess (the sum of squared feedback-class
sizes over the candidate count) and plays the best, preferring a possible secret on ties. It wins
all but a handful of the bundled answers within six guesses.

Example:
    >>> solver = WordleSolver()
    >>> [guess for guess, _ in solver.solve("crane")][0]
    'raise'
    >>> solver.solve("crane")[-1]
    ('crane', 'GGGGG')
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._rules import WORD_LENGTH, feedback
from ._words import answers as bundled_answers
from ._words import valid_guesses as bundled_guesses

__all__ = ["History", "WordleSolver", "history_from_transcript"]

#: Past guesses with their feedback, oldest first: ``[("raise", "XYXXG"), ...]``.
History = Sequence[tuple[str, str]]

_SOLVED = "G" * WORD_LENGTH
_FEEDBACK_LINES = re.compile(r"You submitted \[([a-z]+)\]\.\nFeedback:\n[A-Z ]+\n([GYX ]+)\n")


def history_from_transcript(transcript: str) -> list[tuple[str, str]]:
    """The (guess, feedback) pairs in a TextArena Wordle transcript (the winning guess has none).

    Example:
        >>> history_from_transcript("[GAME] You submitted [slate].\\nFeedback:\\nS L A T E\\nX X G X G\\nYou have")
        [('slate', 'XXGXG')]
    """
    return [(word, marks.replace(" ", "")) for word, marks in _FEEDBACK_LINES.findall(transcript)]


class WordleSolver:
    """Picks the next Wordle guess from the guesses and feedback so far; deterministic.

    Args:
        answers: the possible secrets (default: the bundled answer list).
        guesses: every word it may guess (default: the bundled valid-guess list).
        opener: the first guess.
        probes: how many non-candidate probe words it also weighs per turn.
    """

    def __init__(self, answers: Iterable[str] | None = None, guesses: Iterable[str] | None = None, *,
                 opener: str = "raise", probes: int = 40) -> None:
        self.answers = tuple(sorted(answers if answers is not None else bundled_answers()))
        self.guesses = tuple(sorted(set(guesses if guesses is not None else bundled_guesses()) | set(self.answers)))
        if opener not in self.guesses:
            raise ValueError(f"opener {opener!r} is not in the guess list")
        self.opener = opener
        self.probes = probes
        self._memo: dict[tuple[tuple[str, str], ...], str] = {}
        # probes come from the answers (common words): scoring all guesses costs 5x for no more wins
        self._probe_letters = [(w, tuple(set(w))) for w in self.answers]
        self._fits: dict[tuple[tuple[tuple[str, str], ...], bool], tuple[str, ...]] = {}

    def candidates(self, history: History) -> list[str]:
        """The answers consistent with every (guess, feedback) pair; all valid guesses if none are."""
        key = _key(history)
        found = self._consistent(key, self.answers)
        return list(found or self._consistent(key, self.guesses))

    def _consistent(self, key: tuple[tuple[str, str], ...], pool: tuple[str, ...]) -> tuple[str, ...]:
        """Words of ``pool`` that fit ``key``, narrowed one guess at a time and memoised per prefix."""
        if not key:
            return pool
        memo_key = (key, pool is self.answers)
        if memo_key not in self._fits:
            guess, marks = key[-1]
            self._fits[memo_key] = tuple(w for w in self._consistent(key[:-1], pool) if feedback(guess, w) == marks)
        return self._fits[memo_key]

    def next_guess(self, history: History) -> str:
        """The guess to play after ``history``.

        Raises:
            ValueError: no word is consistent with the history (feedback from another word list).
        """
        key = _key(history)
        if key not in self._memo:
            self._memo[key] = self._choose(key)
        return self._memo[key]

    def act(self, observation: Any) -> dict[str, str]:
        """The action for a Wordle observation: a model or wire dict of this env or of OpenEnv's server.

        The history comes from the typed ``guesses`` and ``feedback`` fields, or, for OpenEnv's
        TextArena server which has none, from the feedback lines of the ``messages`` transcript.
        """
        fields: Mapping[str, Any] = observation if isinstance(observation, Mapping) else vars(observation)
        if "guesses" in fields:
            history = list(zip(fields["guesses"] or [], fields.get("feedback") or [], strict=True))
        else:
            history = history_from_transcript(_transcript(fields.get("messages") or []))
        return {"message": f"[{self.next_guess(history)}]"}

    def solve(self, secret: str, max_guesses: int = 6) -> list[tuple[str, str]]:
        """Play a whole game offline against ``secret``; returns the (guess, feedback) pairs."""
        history: list[tuple[str, str]] = []
        while len(history) < max_guesses and (not history or history[-1][1] != _SOLVED):
            guess = self.next_guess(history)
            history.append((guess, feedback(guess, secret)))
        return history

    def _choose(self, history: tuple[tuple[str, str], ...]) -> str:
        if not history:
            return self.opener
        cands = self.candidates(history)
        if not cands:
            raise ValueError(f"no word fits the feedback {list(history)}")
        if len(cands) <= 2:
            return cands[0]
        tried = {g for g, _ in history}
        pool = [w for w in cands if w not in tried] + self._probe_words(cands, tried)
        cand_set = set(cands)

        def cost(word: str) -> tuple[int, bool, str]:
            sizes = Counter(feedback(word, c) for c in cands).values()
            return sum(n * n for n in sizes), word not in cand_set, word

        return min(pool, key=cost)

    def _probe_words(self, cands: list[str], tried: set[str]) -> list[str]:
        """Non-candidates whose distinct letters best split the candidates (letters near half)."""
        if self.probes <= 0 or len(cands) <= 3:
            return []
        half = len(cands) / 2
        counts = Counter(ch for w in cands for ch in set(w))
        value = {ch: half - abs(half - n) for ch, n in counts.items()}
        skip = tried.union(cands)
        scored = sorted((-sum(value.get(ch, 0.0) for ch in letters), w) for w, letters in self._probe_letters if w not in skip)
        return [w for _, w in scored[: self.probes]]


def _transcript(messages: Iterable[Any]) -> str:
    return "".join(m["content"] if isinstance(m, Mapping) else m.content for m in messages)


def _key(history: History) -> tuple[tuple[str, str], ...]:
    return tuple((g.lower(), m.upper()) for g, m in history)
