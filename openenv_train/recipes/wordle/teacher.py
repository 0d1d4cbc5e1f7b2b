"""A Wordle teacher whose moves teach the rule: a fixed opening, then each guess a random answer word consistent
with all feedback (a random consistent valid word once no answer fits: for secrets that are not answers).

That policy wins about 98-99% of games over the answer list (Norvig's Jotto notebook), and unlike the expert
solver's probe words its choices after the opening follow from the feedback alone, which a small model can imitate.
Games are played against a precomputed feedback table (numpy), so thousands cost a second.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

__all__ = ["ConsistentTeacher"]

_LETTERS = 26


def _table(letters: Any, guess_letters: Any = None, chunk: int = 256) -> Any:
    """Feedback of every guess (default: every word) against every word (as secret) as base-3 codes (G=2, Y=1,
    X=0, letter 0 most significant), ``[guess, secret]``; vectorised over chunks of guesses."""
    import numpy as np

    every = letters if guess_letters is None else guess_letters
    counts = (letters[:, :, None] == np.arange(_LETTERS)).sum(axis=1)  # (n, 26): each secret's letters
    out = np.zeros((len(every), len(letters)), dtype=np.int16)
    for start in range(0, len(every), chunk):
        guesses = every[start:start + chunk]  # (g, 5)
        green = guesses[:, None, :] == letters[None, :, :]  # (g, n, 5)
        same = guesses[:, :, None] == guesses[:, None, :]  # (g, 5, 5): guess letters j and k are equal
        yellows: list[Any] = []
        for k in range(5):
            # secret copies of this letter left for yellows: not matched green, not taken by an earlier yellow
            left = counts[:, guesses[:, k]].T - (green & same[:, None, :, k]).sum(axis=2)
            for j in range(k):
                left -= yellows[j] & same[:, None, j, k]
            yellows.append(~green[:, :, k] & (left > 0))
            out[start:start + chunk] += (np.where(green[:, :, k], 2, 0) + yellows[k]).astype(np.int16) * 3 ** (4 - k)
    return out


class ConsistentTeacher:
    """Plays Wordle with guesses drawn from ``words`` (the answer list) that fit every mark seen so far, after a
    fixed ``opening`` (first guesses played in every game, any valid guesses). Secrets may also be ``extra`` words
    (valid guesses that are not answers): once no word of ``words`` fits, the teacher guesses an extra word that
    does.

    Extra secrets widen what imitation covers: with answers alone and a fixed opening, most answers are the only
    answer with their opening marks, so no game ever has them as a target; an extra secret with the same marks
    makes the fitting answers targets.

    A fixed opening costs the teacher nothing (it still wins about 99%) and narrows what a model must learn: a
    greedy model plays one opening anyway, and after a fixed one the situations it meets are the marks of known
    words rather than of every possible earlier guess.

    Example:
        >>> teacher = ConsistentTeacher(["crane", "slate", "crate", "trace"])
        >>> game = teacher.play("crate", random.Random(0))
        >>> game[-1]
        ('crate', 'GGGGG')
    """

    def __init__(self, words: Sequence[str], opening: Sequence[str] = (), extra: Sequence[str] = ()) -> None:
        import numpy as np

        known = set(words)
        self.answers = len(words)
        """How many of :attr:`words` (the first ones) are answers: the rest are the extra secrets."""
        self.words = list(words) + sorted(set(extra) - known)
        self.opening = [w.lower() for w in opening]
        self._index = {w: i for i, w in enumerate(self.words)}
        bad = [w for w in self.opening if len(w) != 5 or not w.isascii() or not w.isalpha()]
        if bad or len(set(self.opening)) != len(self.opening):
            raise ValueError(f"teacher opening {list(opening)}: needs distinct 5-letter words, got {bad or 'a repeat'}")
        letters = np.array([[ord(c) - 97 for c in w] for w in self.words], dtype=np.int8)
        self.table = _table(letters)
        """Feedback codes, ``table[guess index, secret index]`` (see :meth:`code`)."""
        self._opening_rows = _table(letters, np.array([[ord(c) - 97 for c in w] for w in self.opening],
                                                      dtype=np.int8).reshape(-1, 5))

    def row(self, guess: str) -> Any:
        """The feedback codes of ``guess`` (a word of ``words`` or of the opening) against every secret."""
        if guess in self._index:
            return self.table[self._index[guess]]
        return self._opening_rows[self.opening.index(guess)]

    def index(self, word: str) -> int:
        """The position of ``word`` in ``words``."""
        return self._index[word]

    @staticmethod
    def code(marks: str) -> int:
        """A feedback string as its code in :attr:`table` (base 3: G=2, Y=1, X=0, first letter most significant)."""
        return sum("XYG".index(m) * 3 ** (4 - k) for k, m in enumerate(marks))

    def marks(self, guess: str, secret: str) -> str:
        """The feedback string of ``guess`` (in ``words`` or the opening) for ``secret`` (in ``words``)."""
        code = int(self.row(guess)[self._index[secret]])
        return "".join("XYG"[(code // 3 ** (4 - k)) % 3] for k in range(5))

    def choices(self, candidates: Any) -> Any:
        """The indices the teacher draws its next guess from, given the ``candidates`` that fit every mark so far:
        the answers among them, or all of them when none is an answer."""
        answers = candidates[candidates < self.answers]
        return answers if len(answers) else candidates

    def play(self, secret: str, rng: random.Random, max_guesses: int = 6) -> list[tuple[str, str]]:
        """One game: (guess, marks) pairs until the secret is found or the guesses run out."""
        import numpy as np

        target = self._index[secret]
        candidates = np.arange(len(self.words))
        history: list[tuple[str, str]] = []
        for turn in range(max_guesses):
            if turn < len(self.opening):
                word = self.opening[turn]
            else:
                pool = self.choices(candidates)
                word = self.words[int(pool[rng.randrange(len(pool))])]
            row = self.row(word)
            history.append((word, self.marks(word, secret)))
            if word == secret:
                break
            candidates = candidates[row[candidates] == row[target]]
        return history
