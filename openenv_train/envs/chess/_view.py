"""The chess position as HTML: an 8x8 board of Unicode pieces from the observation's FEN, white at the bottom."""

from __future__ import annotations

import html
from typing import Any

__all__ = ["board_html"]

_PIECES = dict(zip("KQRBNPkqrbnp", "♔♕♖♗♘♙♚♛♜♝♞♟", strict=True))
_SQUARE = ("width:1.6em;height:1.6em;text-align:center;vertical-align:middle;font-size:1.6em;line-height:1;"
           "padding:0;color:#111;")
_LIGHT, _DARK, _MOVED = "#f0d9b5", "#b58863", "#cdd26a"


def _squares(placement: str) -> list[list[str]] | None:
    """Rank 8 first, file a first; "" for an empty square; None when the placement is not 8 ranks of 8."""
    ranks = placement.split("/")
    board = []
    for rank in ranks:
        row: list[str] = []
        for char in rank:
            if char.isdigit():
                row.extend([""] * int(char))
            elif char in _PIECES:
                row.append(char)
            else:
                return None
        board.append(row)
    return board if len(board) == 8 and all(len(r) == 8 for r in board) else None


def board_html(observation: dict[str, Any]) -> str | None:
    """The board of a chess observation (``fen``; ``last_move``/``opponent_last_move`` highlighted), or None."""
    fen = observation.get("fen")
    board = _squares(fen.split()[0]) if isinstance(fen, str) and fen.strip() else None
    if board is None:
        return None
    moved = set()
    for move in (observation.get("last_move"), observation.get("opponent_last_move")):
        if isinstance(move, str) and len(move) >= 4:
            moved.update({move[:2], move[2:4]})
    rows = []
    for r, rank in enumerate(board):
        cells = []
        for f, piece in enumerate(rank):
            name = "abcdefgh"[f] + str(8 - r)
            colour = _MOVED if name in moved else (_LIGHT if (r + f) % 2 == 0 else _DARK)
            cells.append(f'<td data-square="{name}" style="{_SQUARE}background:{colour};">{_PIECES.get(piece, "")}</td>')
        rows.append(f'<tr><th style="padding:0 .3em;font:12px sans-serif;">{8 - r}</th>{"".join(cells)}</tr>')
    files = "".join(f'<th style="font:12px sans-serif;">{f}</th>' for f in "abcdefgh")
    caption = html.escape(f"{observation.get('turn', '?')} to move" + (", check" if observation.get("check") else ""))
    return (f'<table class="chess-board" style="border-collapse:collapse;" aria-label="chess board">'
            f'<caption style="font:12px sans-serif;">{caption}</caption>{"".join(rows)}<tr><th></th>{files}</tr></table>')
