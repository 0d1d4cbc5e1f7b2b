"""A small Okapi BM25 index in pure Python: tokens, postings, ranked search."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

__all__ = ["BM25Index", "tokenize"]

_WORD = re.compile(r"[a-z0-9_]+")
STOP_WORDS = frozenset(
    "a an and are as at be by does for from how in is it its of on or that the this to what when which with".split())
"""Words too common to rank by: they only add noise to a question's score."""


def tokenize(text: str) -> list[str]:
    """Lower-case words; a snake_case name counts as itself and as its parts (``get_close_matches``,
    ``get``, ``close``, ``matches``), so both the name and its words find it."""
    tokens: list[str] = []
    for word in _WORD.findall(text.lower()):
        parts = [part for part in word.split("_") if part]
        if len(parts) > 1:
            tokens.append(word.strip("_"))
        tokens.extend(part for part in parts if part not in STOP_WORDS)
    return tokens


class BM25Index:
    """Okapi BM25 over a fixed list of texts (``k1`` term saturation, ``b`` length normalisation).

    Example:
        >>> index = BM25Index(["the cat sat", "a dog barked", "cat and dog"])
        >>> [i for i, _ in index.search("cat", k=5)]
        [0, 2]
    """

    def __init__(self, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._postings: dict[str, list[tuple[int, int]]] = {}
        self._lengths: list[int] = []
        for index, text in enumerate(texts):
            counts = Counter(tokenize(text))
            self._lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self._postings.setdefault(term, []).append((index, tf))
        total = len(self._lengths)
        self._average = (sum(self._lengths) / total) if total else 0.0
        self._idf = {term: math.log(1.0 + (total - len(docs) + 0.5) / (len(docs) + 0.5))
                     for term, docs in self._postings.items()}

    def __len__(self) -> int:
        return len(self._lengths)

    def search(self, query: str, *, k: int = 5) -> list[tuple[int, float]]:
        """The ``k`` best (text index, score) pairs for ``query``, best first (ties by index); texts sharing
        no term with the query are left out."""
        scores: dict[int, float] = {}
        for term in set(tokenize(query)):
            idf = self._idf.get(term)
            if idf is None:
                continue
            for index, tf in self._postings[term]:
                norm = 1.0 - self.b + self.b * self._lengths[index] / self._average
                scores[index] = scores.get(index, 0.0) + idf * tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
