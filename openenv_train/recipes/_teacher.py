"""A Wordle teacher whose moves teach the rule: each guess is a random answer word consistent with all feedback.

That policy wins about 98% of games over the answer list (Norvig's Jotto notebook), and unlike the expert solver's
fixed opener and probe words its choices follow from the feedback alone, which a small model can imitate. Games are
played against a precomputed feedback table (numpy), so thousands cost a second.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

__all__ = ["ConsistentTeacher"]

_LETTERS = 26


def _table(letters: Any, chunk: int = 256) -> Any:
    """Feedback of every word (as guess) against every word (as secret) as base-3 codes (G=2, Y=1, X=0, letter 0
    most significant), ``[guess, secret]``; vectorised over chunks of guesses."""
    import numpy as np

    n = len(letters)
    counts = (letters[:, :, None] == np.arange(_LETTERS)).sum(axis=1)  # (n, 26): each secret's letters
    out = np.zeros((n, n), dtype=np.int16)
    for start in range(0, n, chunk):
        guesses = letters[start:start + chunk]  # (g, 5)
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
    """Plays Wordle with guesses drawn from ``words`` (the answer list) that fit every mark seen so far.

    Example:
        >>> teacher = ConsistentTeacher(["crane", "slate", "crate", "trace"])
        >>> game = teacher.play("crate", random.Random(0))
        >>> game[-1]
        ('crate', 'GGGGG')
    """

    def __init__(self, words: Sequence[str]) -> None:
        import numpy as np

        self.words = list(words)
        self._index = {w: i for i, w in enumerate(self.words)}
        letters = np.array([[ord(c) - 97 for c in w] for w in self.words], dtype=np.int8)
        self.table = _table(letters)
        """Feedback codes, ``table[guess index, secret index]`` (see :meth:`code`)."""

    def index(self, word: str) -> int:
        """The position of ``word`` in ``words``."""
        return self._index[word]

    @staticmethod
    def code(marks: str) -> int:
        """A feedback string as its code in :attr:`table` (base 3: G=2, Y=1, X=0, first letter most significant)."""
        return sum("XYG".index(m) * 3 ** (4 - k) for k, m in enumerate(marks))

    def marks(self, guess: str, secret: str) -> str:
        """The feedback string of ``guess`` for ``secret`` (both in ``words``), e.g. ``'XYXXG'``."""
        code = int(self.table[self._index[guess], self._index[secret]])
        return "".join("XYG"[(code // 3 ** (4 - k)) % 3] for k in range(5))

    def play(self, secret: str, rng: random.Random, max_guesses: int = 6) -> list[tuple[str, str]]:
        """One game: (guess, marks) pairs until the secret is found or the guesses run out."""
        import numpy as np

        target = self._index[secret]
        candidates = np.arange(len(self.words))
        history: list[tuple[str, str]] = []
        for _ in range(max_guesses):
            guess = int(candidates[rng.randrange(len(candidates))])
            code = self.table[guess, target]
            history.append((self.words[guess], self.marks(self.words[guess], secret)))
            if guess == target:
                break
            candidates = candidates[self.table[guess, candidates] == code]
        return history
