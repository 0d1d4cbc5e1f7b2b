"""The rules of Wordle as pure functions: guess parsing, letter feedback and the partial score.

Nothing here knows about episodes or pydantic; the environment and the solver both build on it.
"""

from __future__ import annotations

import re

__all__ = [
    "GREEN",
    "WORD_LENGTH",
    "X",
    "YELLOW",
    "extract_guess",
    "feedback",
    "format_action",
    "partial_score",
    "strict_guess",
]

WORD_LENGTH = 5
GREEN, YELLOW, X = "G", "Y", "X"

_BRACKETED_FIVE = re.compile(r"\[([A-Za-z]{5})\]")
_BRACKETED_WORD = re.compile(r"\[(\w+)\]")
_NOT_LETTER = re.compile(r"[^a-z]")


def feedback(guess: str, secret: str) -> str:
    """Per-letter feedback of ``guess`` against ``secret``: G (right place), Y (in word), X (absent).

    Greens are counted first and each secret letter is matched at most once, so a letter
    repeated in the guess more often than in the secret is X beyond the secret's count.

    Example:
        >>> feedback("pappy", "apple")
        'YYGXX'
        >>> feedback("crane", "crane")
        'GGGGG'
    """
    if guess == secret:
        return GREEN * len(guess)
    marks = [X] * len(guess)
    unmatched: list[str] = []  # secret letters not matched green; lists beat Counter at this size
    for i, (g, s) in enumerate(zip(guess, secret, strict=True)):
        if g == s:
            marks[i] = GREEN
        else:
            unmatched.append(s)
    for i, g in enumerate(guess):
        if marks[i] == X and g in unmatched:
            marks[i] = YELLOW
            unmatched.remove(g)
    return "".join(marks)


def extract_guess(message: str) -> str | None:
    """The guess in a free-form message, as OpenEnv's Wordle tooling reads it (lenient).

    The first ``[xxxxx]`` (five letters in square brackets) wins; otherwise the first five
    letters of the message, ignoring everything that is not a letter; ``None`` when the
    message has fewer than five letters.

    Example:
        >>> extract_guess("I'd go with [Crane] this time")
        'crane'
        >>> extract_guess("slate!")
        'slate'
        >>> extract_guess("[ab]") is None
        True
    """
    match = _BRACKETED_FIVE.search(message)
    if match:
        return match.group(1).lower()
    letters = _NOT_LETTER.sub("", message.lower())
    return letters[:WORD_LENGTH] if len(letters) >= WORD_LENGTH else None


def strict_guess(message: str) -> str | None:
    """The guess as TextArena's ``Wordle-v0`` reads it: the first ``[word]``, any length.

    A message without any square bracket counts as wrapped in brackets whole (TextArena's
    ``ActionFormattingWrapper``). ``None`` means the format is wrong (no ``[word]``).

    Example:
        >>> strict_guess("my guess: [cranes]")
        'cranes'
        >>> strict_guess("crane")
        'crane'
        >>> strict_guess("I guess crane") is None
        True
    """
    match = _BRACKETED_WORD.search(format_action(message))
    return match.group(1).lower() if match else None


def format_action(message: str) -> str:
    """The message as the game's transcript shows it: wrapped in brackets unless it has one."""
    return message if "[" in message or "]" in message else f"[{message}]"


def partial_score(marks: str | None) -> float:
    """TextArena's completion score of one guess: (greens + 0.5 * yellows) / 5; 0.0 for none.

    Example:
        >>> partial_score("GGYXX")
        0.5
        >>> partial_score(None)
        0.0
    """
    if not marks:
        return 0.0
    return (marks.count(GREEN) + 0.5 * marks.count(YELLOW)) / len(marks)
