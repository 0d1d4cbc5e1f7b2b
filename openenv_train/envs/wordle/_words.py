"""The bundled word lists: secret answers and valid guesses (``data/*.txt``, see ``data/build_wordlists.py``)."""

from __future__ import annotations

import functools
import os
import random
from importlib import resources

__all__ = ["SPLIT_SEED_ENV", "answer_splits", "answers", "is_valid_guess", "valid_guesses"]

#: The variable a Wordle server reads the seed of its word splits from (default 0, the recipe's default seed).
SPLIT_SEED_ENV = "OPENENV_TRAIN_WORDLE_SEED"

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


def answer_splits(seed: int | None = None, held_out: int = 100, grpo: int = 300) -> dict[str, list[str]]:
    """The answers split three ways by ``seed`` (default ``$OPENENV_TRAIN_WORDLE_SEED``, else 0), as the Wordle
    recipe splits its secrets: ``held_out`` (evaluation; never a training secret), ``grpo`` (GRPO's) and ``sft``
    (the rest). Disjoint, and the same lists for the same seed.

    Example:
        >>> splits = answer_splits(0)
        >>> [len(splits[name]) for name in ("held_out", "grpo")], set(splits["held_out"]) & set(splits["sft"])
        ([100, 300], set())
    """
    if seed is None:
        seed = int(os.environ.get(SPLIT_SEED_ENV, "0") or 0)
    words = sorted(answers())
    random.Random(seed).shuffle(words)
    return {"held_out": words[:held_out], "grpo": words[held_out:held_out + grpo], "sft": words[held_out + grpo:]}
