"""The game's words to the player, worded as TextArena's ``Wordle-v0`` words them.

Matching the wording keeps a policy trained here at home on OpenEnv's TextArena server, whose
observation is the transcript these functions write.
"""

from __future__ import annotations

__all__ = [
    "ENV_ID",
    "WIN_REASON",
    "instructions",
    "invalid_move_warning",
    "not_a_word",
    "out_of_guesses_reason",
    "repeated",
    "submitted",
    "transcript_line",
    "wrong_format",
    "wrong_length",
]

#: What OpenEnv's TextArena server calls this game.
ENV_ID = "Wordle-v0"
WIN_REASON = "Congratulations! You guessed the word correctly!"
_GAME = "GAME"  # every line of the transcript is the game's, the player's guesses included


def instructions(word_length: int, max_guesses: int) -> str:
    """The opening prompt of a game."""
    return (
        f"You are Playing Wordle.\nA secret {word_length}-letter word has been chosen. "
        f"You have {max_guesses} attempts to guess it.\n"
        "For each guess, wrap your word in square brackets (e.g., '[apple]').\n"
        "Feedback for each letter will be given as follows:\n"
        "  - G (green): correct letter in the correct position\n"
        "  - Y (yellow): letter exists in the word but in the wrong position\n"
        "  - X (wrong): letter is not in the word\n"
        "Enter your guess to begin.\n"
    )


def transcript_line(text: str) -> str:
    """One transcript entry, as TextArena's LLM observation wrapper renders it."""
    return f"\n[{_GAME}] {text}"


def submitted(word: str, marks: str, left: int) -> str:
    """The feedback message after a valid guess that did not win."""
    return (
        f"You submitted [{word}].\nFeedback:\n{' '.join(word.upper())}\n{' '.join(marks)}\n"
        f"You have {left} guesses left."
    )


def invalid_move_warning(reason: str) -> str:
    """The warning after a first invalid move (the second in a row ends the game)."""
    return (
        f"You attempted an invalid move. Reason: {reason} "
        "Please resubmit a valid move and remember to follow the game rules to avoid penalties."
    )


def out_of_guesses_reason(score: float, secret: str) -> str:
    """Why the game ended when the guesses ran out."""
    return (
        "The turn limit has been reached. You didn't guess the word, but your best guess matched "
        f"{round(score * 100)}% of the letters in the correct positions.\nThe secret word was: **{secret}**."
    )


def wrong_format() -> str:
    """Reason: no guess could be read from the message."""
    return "You tried submitting a word in the wrong format. Please make sure to use squared brackets."


def wrong_length(word_length: int) -> str:
    """Reason: the bracketed word has the wrong number of letters."""
    return f"Your word must be exactly {word_length} letters."


def repeated(word: str) -> str:
    """Reason: the word was guessed before."""
    return f"You have already guessed '{word}' before. Please try a different word."


def not_a_word(word: str) -> str:
    """Reason: the word is not in the valid-guess list."""
    return f"'{word}' is not an English word."
