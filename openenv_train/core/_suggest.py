"""Close-match hints for error messages about unknown names."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(name: str, known: Iterable[str], *, otherwise: str = "") -> str:
    """``"; did you mean 'a' or 'b'?"`` for up to three close matches of ``name``, else ``otherwise``.

    Example:
        >>> did_you_mean("wordel", ["wordle", "echo"])
        "; did you mean 'wordle'?"
        >>> did_you_mean("zzz", ["wordle"], otherwise=".")
        '.'
    """
    close = difflib.get_close_matches(name, list(known), n=3)
    return f"; did you mean {' or '.join(map(repr, close))}?" if close else otherwise
