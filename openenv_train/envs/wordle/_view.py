"""The Wordle board as HTML: one row of coloured tiles per guess, empty rows for the guesses left."""

from __future__ import annotations

import html
from typing import Any

__all__ = ["board_html"]

#: Tile colours of the G/Y/X feedback (Wordle's own green, yellow and grey).
_COLOURS = {"G": "#6aaa64", "Y": "#c9b458", "X": "#787c7e"}
_NAMES = {"G": "right place", "Y": "elsewhere in the word", "X": "not in the word"}
_TILE = ("display:inline-block;width:2.2em;height:2.2em;line-height:2.2em;margin:2px;text-align:center;"
         "font:bold 1.1em sans-serif;text-transform:uppercase;")


def _tile(letter: str, mark: str | None) -> str:
    if mark is None:
        style = _TILE + "border:2px solid #d3d6da;color:#111;"
        return f'<span class="tile empty" style="{style}">{html.escape(letter)}</span>'
    colour = _COLOURS.get(mark, "#787c7e")
    title = html.escape(f"{letter}: {_NAMES.get(mark, mark)}", quote=True)
    return (f'<span class="tile" data-mark="{html.escape(mark, quote=True)}" title="{title}" '
            f'style="{_TILE}background:{colour};color:#fff;border:2px solid {colour};">{html.escape(letter)}</span>')


def board_html(observation: dict[str, Any]) -> str | None:
    """The board of a Wordle observation (``guesses``, ``feedback``, ``remaining_guesses``), or None without them."""
    guesses, feedback = observation.get("guesses"), observation.get("feedback")
    if not isinstance(guesses, list) or not isinstance(feedback, list):
        return None
    rows = []
    for guess, marks in zip(guesses, feedback, strict=False):
        guess, marks = str(guess), str(marks)
        tiles = "".join(_tile(letter, marks[i] if i < len(marks) else "X") for i, letter in enumerate(guess))
        rows.append(f'<div class="guess" data-guess="{html.escape(guess, quote=True)}">{tiles}</div>')
    left = observation.get("remaining_guesses")
    width = len(str(guesses[0])) if guesses else 5
    for _ in range(min(left, 10) if isinstance(left, int) and left > 0 else 0):
        rows.append('<div class="guess empty">' + _tile("", None) * width + "</div>")
    return f'<div class="wordle-board" role="img" aria-label="Wordle board">{"".join(rows)}</div>'
