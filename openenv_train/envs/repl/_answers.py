"""Whether a FINAL answer matches the expected one: numbers by value, text normalised."""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["answers_match", "normalise"]

_INT = re.compile(r"^[+-]?\d+$")
REL_TOL = 1e-6
ABS_TOL = 1e-9


def normalise(value: Any) -> str:
    """Text of an answer, stripped, with runs of whitespace made one space, case-folded.

    Example:
        >>> normalise("  Hello   World ")
        'hello world'
    """
    text = value if isinstance(value, str) else str(value)
    return " ".join(text.split()).casefold()


def _number(value: Any) -> int | float | None:
    """An int or a finite float from a number or numeric text (``1,000`` and ``1_000`` too); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number: int | float = value
    elif isinstance(value, str):
        text = value.strip().replace(",", "").replace("_", "")
        if _INT.match(text):
            return int(text)
        try:
            number = float(text)
        except ValueError:
            return None
    else:
        return None
    return number if isinstance(number, int) or math.isfinite(number) else None


def answers_match(given: Any, expected: Any) -> bool:
    """Whether ``given`` counts as ``expected``.

    Two numbers (or numeric texts) match when equal: ints exactly, otherwise within a relative
    tolerance of 1e-6; anything else matches when the normalised texts are equal.

    Example:
        >>> answers_match(" 76127\\n", 76127), answers_match(0.1428571, 0.142857), answers_match("SUNDAY", "Sunday")
        (True, True, True)
        >>> answers_match(121932631112635260, 121932631112635269)
        False
    """
    g, e = _number(given), _number(expected)
    if g is not None and e is not None:
        if isinstance(g, int) and isinstance(e, int):
            return g == e
        if isinstance(e, int) and isinstance(g, float) and abs(e) > 2**53:
            return False  # a float cannot hold such an int exactly
        return math.isclose(g, e, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return normalise(given) == normalise(expected)
