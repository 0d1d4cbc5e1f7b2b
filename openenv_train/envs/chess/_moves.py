"""Reading the agent's move (UCI or SAN) and saying clearly why one is refused."""

from __future__ import annotations

import chess

__all__ = ["legal_uci", "parse_move"]

_SHOWN = 12


def legal_uci(board: chess.Board) -> list[str]:
    """The legal moves in UCI, sorted."""
    return sorted(move.uci() for move in board.legal_moves)


def _hint(board: chess.Board) -> str:
    moves = legal_uci(board)
    more = f", ... ({len(moves)} in all, see legal_moves)" if len(moves) > _SHOWN else ""
    return f"legal moves include {', '.join(moves[:_SHOWN])}{more}"


def parse_move(board: chess.Board, text: str) -> chess.Move:
    """The legal move ``text`` names, read as UCI first and then as SAN.

    Raises:
        ValueError: the text is empty, unparsable, ambiguous or illegal here; the message lists legal moves.

    Example:
        >>> board = chess.Board()
        >>> parse_move(board, "e2e4").uci(), parse_move(board, "Nf3").uci()
        ('e2e4', 'g1f3')
    """
    text = text.strip()
    side = "white" if board.turn == chess.WHITE else "black"
    if not text:
        raise ValueError(f'no move given: send {{"move": "e2e4"}} (UCI) or {{"move": "Nf3"}} (SAN); {_hint(board)}')
    try:
        move = board.parse_uci(text)
    except chess.IllegalMoveError:
        raise ValueError(f"{text!r} is not a legal move for {side} here{_promotion_hint(board, text)}; "
                         f"{_hint(board)}") from None
    except chess.InvalidMoveError:
        pass  # not UCI syntax: try SAN
    else:
        if not move:
            raise ValueError(f"{text!r} (the null move) is not allowed; {_hint(board)}")
        return move
    try:
        return board.parse_san(text)
    except chess.AmbiguousMoveError:
        raise ValueError(f"{text!r} is ambiguous here: add the origin file or rank (e.g. Nbd2) or use UCI; "
                         f"{_hint(board)}") from None
    except chess.IllegalMoveError:
        raise ValueError(f"{text!r} is not a legal move for {side} here; {_hint(board)}") from None
    except chess.InvalidMoveError:
        raise ValueError(f"cannot read {text!r} as a move in UCI (e2e4, e7e8q) or SAN (Nf3, O-O); "
                         f"{_hint(board)}") from None


def _promotion_hint(board: chess.Board, text: str) -> str:
    try:
        move = chess.Move.from_uci(text)
    except chess.InvalidMoveError:
        return ""
    if move.promotion is None and board.is_legal(chess.Move(move.from_square, move.to_square, chess.QUEEN)):
        return f" (a promotion must name the piece, e.g. {text}q)"
    return ""
