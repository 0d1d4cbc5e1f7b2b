"""The pyspiel games of the catalog (``openspiel/<key>``): names, default parameters and blurbs.

Kept apart from the env package so the catalog lists them without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["GAMES", "SpielGame"]


@dataclass(frozen=True)
class SpielGame:
    """One catalog game: ``openspiel/<key>`` plays pyspiel's ``name`` with ``params``."""

    key: str
    name: str
    blurb: str
    params: dict[str, Any] = field(default_factory=dict)
    turn_based: bool = False
    """A simultaneous-move game, played turn by turn (pyspiel.load_game_as_turn_based)."""


GAMES: dict[str, SpielGame] = {g.key: g for g in (
    SpielGame("breakthrough", "breakthrough", "Breakthrough on 8x8: race a pawn to the far row; pawns capture diagonally."),
    SpielGame("checkers", "checkers", "Checkers (8x8 draughts) with forced captures and kings."),
    SpielGame("othello", "othello", "Othello (Reversi) on 8x8: outflank to flip discs; most discs wins."),
    SpielGame("hex", "hex", "Hex on 7x7: connect your two sides of the rhombus.", {"board_size": 7}),
    SpielGame("go", "go", "Go on 9x9 with komi 7.5 (Tromp-Taylor scoring).", {"board_size": 9, "komi": 7.5}),
    SpielGame("dots_and_boxes", "dots_and_boxes", "Dots and boxes on a 2x2-box grid: close a box to move again."),
    SpielGame("oware", "oware", "Oware (Abapa), a mancala game of sowing and capturing seeds."),
    SpielGame("mancala", "mancala", "Kalah-style mancala: sow seeds, land in your store to move again."),
    SpielGame("nim", "nim", "Nim on piles 1,3,5,7: take any number from one pile; the last to take wins."),
    SpielGame("clobber", "clobber", "Clobber on 5x6: move onto an adjacent enemy stone; the last to move wins."),
    SpielGame("pentago", "pentago", "Pentago: place a marble, then rotate a quadrant; five in a row wins."),
    SpielGame("amazons", "amazons", "Game of the Amazons on 10x10: move a queen, then shoot an arrow to block a square."),
    SpielGame("nine_mens_morris", "nine_mens_morris", "Nine men's morris: form mills to remove the opponent's men."),
    SpielGame("lines_of_action", "lines_of_action", "Lines of action: connect all your pieces into one group."),
    SpielGame("backgammon", "backgammon", "Backgammon with seeded dice: bear off all 15 checkers first."),
    SpielGame("liars_dice", "liars_dice", "Liar's dice, one die each: bid on the dice or call liar."),
    SpielGame("leduc_poker", "leduc_poker", "Leduc poker: six cards, two betting rounds, one public card."),
    SpielGame("goofspiel", "goofspiel", "Goofspiel, 5 cards: bid a card for each prize card (simultaneous, played turn by turn).",
              {"num_cards": 5}, turn_based=True),
    SpielGame("battleship", "battleship", "Battleship on 10x10 against a hidden fleet: place ships, then shoot."),
    SpielGame("phantom_ttt", "phantom_ttt", "Phantom tic-tac-toe: you do not see the opponent's marks until you hit one."),
    SpielGame("dark_hex", "dark_hex", "Dark hex on 3x3: hex where the opponent's stones are hidden."),
)}
