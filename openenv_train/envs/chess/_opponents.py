"""Opponents: a uniformly random mover and a shallow alpha-beta search over material, both seeded."""

from __future__ import annotations

import random
from typing import Literal

import chess

__all__ = ["OpponentKind", "choose_move", "material", "random_move", "search_move"]

OpponentKind = Literal["random", "search"]

#: Centipawn values; the king is never captured, so it is worth nothing here.
PIECE_VALUES: dict[int, int] = {
    chess.PAWN: 100, chess.KNIGHT: 320, chess.BISHOP: 330, chess.ROOK: 500, chess.QUEEN: 900, chess.KING: 0,
}
MATE = 100_000


def material(board: chess.Board) -> int:
    """Material balance in centipawns from the side to move's point of view.

    Example:
        >>> material(chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 0 1"))
        500
    """
    score = 0
    for piece, value in PIECE_VALUES.items():
        mask = board.pieces_mask(piece, chess.WHITE), board.pieces_mask(piece, chess.BLACK)
        score += value * (chess.popcount(mask[0]) - chess.popcount(mask[1]))
    return score if board.turn == chess.WHITE else -score


def _order_key(board: chess.Board, move: chess.Move) -> int:
    """Sort key that tries promotions and captures of valuable pieces first (better pruning)."""
    victim = board.piece_type_at(move.to_square)
    gain = PIECE_VALUES[victim] if victim is not None else (100 if board.is_en_passant(move) else 0)
    return -(gain + (PIECE_VALUES[move.promotion] if move.promotion else 0))


def _leaf(board: chess.Board) -> int:
    # Only a side in check can be mated, so the costly move generation runs rarely.
    if board.is_check() and not any(board.generate_legal_moves()):
        return -MATE
    return material(board)


def _negamax(board: chess.Board, depth: int, alpha: int, beta: int) -> int:
    if depth == 0:
        return _leaf(board)
    moves = sorted(board.legal_moves, key=lambda m: _order_key(board, m))
    if not moves:
        return -(MATE + depth) if board.is_check() else 0  # a sooner mate (more depth left) is worse
    for move in moves:
        board.push(move)
        score = -_negamax(board, depth - 1, -beta, -alpha)
        board.pop()
        if score >= beta:
            return beta
        alpha = max(alpha, score)
    return alpha


def search_move(board: chess.Board, rng: random.Random, depth: int = 2) -> chess.Move:
    """The best move by a ``depth``-ply alpha-beta search over material; ties broken by ``rng``.

    Raises:
        ValueError: the side to move has no legal move.

    Example:
        >>> board = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
        >>> board.san(search_move(board, random.Random(0), depth=1))
        'Ra8#'
    """
    moves = sorted(board.legal_moves, key=lambda m: m.uci())
    if not moves:
        raise ValueError(f"no legal move in {board.fen()}")
    rng.shuffle(moves)
    moves.sort(key=lambda m: _order_key(board, m))  # stable: the shuffle breaks ties between equal keys
    best, best_score = moves[0], -(MATE * 2)
    alpha, beta = -(MATE * 2), MATE * 2
    for move in moves:
        board.push(move)
        score = -_negamax(board, depth - 1, -beta, -alpha)
        board.pop()
        if score > best_score:
            best, best_score = move, score
            alpha = max(alpha, score)
    return best


def random_move(board: chess.Board, rng: random.Random) -> chess.Move:
    """A legal move drawn uniformly by ``rng`` (in UCI order first, so the draw depends on the seed only)."""
    moves = sorted(board.legal_moves, key=lambda m: m.uci())
    if not moves:
        raise ValueError(f"no legal move in {board.fen()}")
    return rng.choice(moves)


def choose_move(kind: OpponentKind, board: chess.Board, rng: random.Random, depth: int = 2) -> chess.Move:
    """The move of an opponent of ``kind`` (``"random"`` or ``"search"``)."""
    if kind == "search":
        return search_move(board, rng, depth)
    return random_move(board, rng)
