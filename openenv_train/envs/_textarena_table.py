"""The TextArena games of the catalog (``textarena/<key>``): env ids and blurbs.

Kept apart from the env package so the catalog lists them without importing textarena. Only games
that run offline are here: Hangman, WordLadder and WordSearch download NLTK word lists at start, and the
multi-player social games need other LLM players, so they are not in the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TEXTARENA_GAMES", "TextArenaGame"]


@dataclass(frozen=True)
class TextArenaGame:
    """One catalog game: ``textarena/<key>`` plays ``ta.make(env_id)`` as its single player."""

    key: str
    env_id: str
    blurb: str
    family: str = "puzzles"


TEXTARENA_GAMES: dict[str, TextArenaGame] = {g.key: g for g in (
    TextArenaGame("sudoku", "Sudoku-v0", "Fill a seeded 9x9 Sudoku one cell a move: [row col number]."),
    TextArenaGame("minesweeper", "Minesweeper-v0", "Clear an 8x8 Minesweeper board: [reveal r c] or [flag r c]."),
    TextArenaGame("mastermind", "Mastermind-v0", "Break a 4-digit code from black and white peg feedback: [1 2 3 4]."),
    TextArenaGame("sokoban", "Sokoban-v0", "Push every box onto a goal in a seeded Sokoban room: [up], [left], ..."),
    TextArenaGame("tower_of_hanoi", "TowerOfHanoi-v0", "Move the disk tower from A to C, smaller on larger: [A C]."),
    TextArenaGame("lights_out", "LightsOut-v0", "Switch off every light of a 5x5 grid; a press toggles neighbours: [r c]."),
    TextArenaGame("fifteen_puzzle", "FifteenPuzzle-v0", "Slide the tiles of the 15-puzzle into order: [up], [down], ..."),
    TextArenaGame("frozen_lake", "FrozenLake-v0", "Walk across a frozen lake to the goal without falling in a hole.",
                  "grid worlds"),
    TextArenaGame("countdown", "Countdown-v0", "Combine numbers with + - * / to hit the target: [i j op]."),
    TextArenaGame("peg_jump", "PegJump-v0", "Peg solitaire on a triangle: jump pegs until one is left: [from to]."),
    TextArenaGame("cryptarithm", "Cryptarithm-v0", "Solve SEND + MORE = MONEY-style letter arithmetic: [A 5]."),
    TextArenaGame("slitherlink", "Slitherlink-v0", "Draw one loop around the grid so each number counts its edges."),
    TextArenaGame("logic_puzzle", "LogicPuzzle-v0", "Deduce who has what from clues, marking a grid: [alice burger X]."),
    TextArenaGame("three_card_monte", "ThreeCardMonte-v0", "Follow the ball through the cup shuffles, then guess its cup: [1].",
                  "games"),
)}
