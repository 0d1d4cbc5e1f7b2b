"""The bundled word lists: secret answers and valid guesses (``data/*.txt``, see ``data/build_wordlists.py``)."""

from __future__ import annotations

import functools
from importlib import resources

__all__ = ["answers", "is_valid_guess", "valid_guesses"]

_PACKAGE = __name__.rpartition(".")[0]


def _read(name: str) -> tuple[str, ...]:
    text = (resources.files(_PACKAGE) / "data" / name).read_text(encoding="ascii")
    return tuple(text.split())


@functools.cache
def answers() -> tuple[str, ...]:
    """The ~2,000 common 5-letter words that secrets are drawn from, sorted."""
    return _read("answers.txt")


@functools.cache
def valid_guesses() -> frozenset[str]:
    """Every accepted 5-letter guess (~10,000 words); a superset of :func:`answers`."""
    return frozenset(_read("valid_guesses.txt"))


def is_valid_guess(word: str) -> bool:
    """Whether ``word`` (lowercase) is in the valid-guess list.

    Example:
        >>> is_valid_guess("crane"), is_valid_guess("xqzvw")
        (True, False)
    """
    return word in valid_guesses()
