"""Comparing a submitted answer with the reference: numbers with tolerance, text normalised, lists in order."""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["ABS_TOL", "REL_TOL", "answers_match", "scalars_match"]

REL_TOL = 1e-4
ABS_TOL = 1e-6
_SPACES = re.compile(r"\s+")

Scalar = str | int | float


def _bare(value: Any) -> str:
    """The value as text without surrounding whitespace, quotes or a final period."""
    text, previous = str(value), None
    while text != previous:
        previous, text = text, text.strip().strip("\"'`").rstrip(".")
    return text


def _text(value: Any) -> str:
    return _SPACES.sub(" ", _bare(value)).casefold()


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    text = _bare(value).replace(",", "").replace("$", "").strip()
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def scalars_match(expected: Scalar, submitted: Any) -> bool:
    """A number within ``REL_TOL``/``ABS_TOL`` of a numeric reference, else equal normalised text.

    Example:
        >>> scalars_match(178.05, "$178.05"), scalars_match(60, "60.0"), scalars_match("Japan", " japan. ")
        (True, True, True)
        >>> scalars_match(3.84, 3.85)
        False
    """
    if isinstance(expected, int | float):
        number = _number(submitted)
        return number is not None and math.isclose(number, expected, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return _text(expected) == _text(submitted)


def _items(submitted: Any) -> list[Any]:
    if isinstance(submitted, list):
        return submitted
    text = str(submitted).strip()
    if text.startswith("["):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return parsed
        text = text.strip("[]")
    parts = text.splitlines() if "\n" in text else text.split(",")
    return [p for p in (part.strip() for part in parts) if p]


def answers_match(expected: Scalar | list[Scalar], submitted: Any) -> bool:
    """Whether ``submitted`` is the reference answer.

    A list reference needs the same items in the same order, given as a list, a JSON
    list, or text with one item per line or comma-separated.

    Example:
        >>> answers_match(["Books", "Toys"], "books, toys"), answers_match(["Books", "Toys"], ["Toys", "Books"])
        (True, False)
        >>> answers_match(13, [13])
        True
    """
    if isinstance(expected, list):
        items = _items(submitted)
        return len(items) == len(expected) and all(scalars_match(e, s) for e, s in zip(expected, items, strict=True))
    if isinstance(submitted, list):
        return len(submitted) == 1 and scalars_match(expected, submitted[0])
    return scalars_match(expected, submitted)
