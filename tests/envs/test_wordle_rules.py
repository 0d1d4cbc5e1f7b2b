"""Wordle's pure rules (feedback, guess reading, partial score) and the bundled word lists."""

from __future__ import annotations

import re
from collections import Counter
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_train.envs.wordle import answers, extract_guess, feedback, partial_score, valid_guesses
from openenv_train.envs.wordle._rules import strict_guess


@pytest.mark.parametrize(("guess", "secret", "marks"), [
    ("crane", "crane", "GGGGG"),
    ("pappy", "apple", "YYGXX"),  # the third p is X: apple has two p's, one already green
    ("speed", "abide", "XXYXY"),  # only the first e is yellow
    ("eerie", "there", "YXYXG"),  # the green e counts first, leaving one e for a yellow
    ("geese", "those", "XXXGG"),  # the secret's one e is green: the others are X
    ("trace", "crane", "XGGYG"),
    ("slate", "crane", "XXGXG"),
    ("aaaaa", "abbey", "GXXXX"),
])
def test_feedback_handles_repeated_letters(guess: str, secret: str, marks: str) -> None:
    assert feedback(guess, secret) == marks


@given(st.text("abcde", min_size=5, max_size=5), st.text("abcde", min_size=5, max_size=5))
def test_feedback_matches_the_letter_counting_rule(guess: str, secret: str) -> None:
    marks = feedback(guess, secret)
    assert [m == "G" for m in marks] == [g == s for g, s in zip(guess, secret, strict=True)]
    for letter in set(guess):
        marked = sum(1 for g, m in zip(guess, marks, strict=True) if g == letter and m != "X")
        assert marked == min(guess.count(letter), secret.count(letter))
        # yellows go to the earliest non-green copies of a letter
        rest = [m for g, m in zip(guess, marks, strict=True) if g == letter and m != "G"]
        assert rest == sorted(rest, key=lambda m: m != "Y")


@pytest.mark.parametrize(("message", "guess"), [
    ("[crane]", "crane"),
    ("I think [Slate] beats [crane]", "slate"),  # the first bracketed five-letter word
    ("[ab] then [crane]", "crane"),  # a bracket of another length is skipped
    ("crane", "crane"),
    ("slate!", "slate"),
    ("c r a n e", "crane"),
    ("[cranes] maybe", "crane"),  # no [xxxxx]: the first five letters
    ("my guess is crane", "mygue"),  # as OpenEnv's extract_guess reads it
    ("hi", None),
    ("[ab]", None),
    ("", None),
])
def test_extract_guess_reads_brackets_else_first_five_letters(message: str, guess: str | None) -> None:
    assert extract_guess(message) == guess


@pytest.mark.parametrize(("message", "guess"), [
    ("[crane]", "crane"),
    ("my guess: [cranes]", "cranes"),
    ("crane", "crane"),  # no bracket at all: the whole message is the bracketed word
    ("I guess crane", None),
    ("crane]", None),
    ("[CRANE] and [slate]", "crane"),
])
def test_strict_guess_reads_like_textarena(message: str, guess: str | None) -> None:
    assert strict_guess(message) == guess


@pytest.mark.parametrize(("marks", "score"), [
    ("GGGGG", 1.0), ("XXXXX", 0.0), ("GGYXX", 0.5), ("XGGYG", 0.7), ("YYYYY", 0.5), (None, 0.0), ("", 0.0),
])
def test_partial_score_counts_yellows_half(marks: str | None, score: float) -> None:
    assert partial_score(marks) == pytest.approx(score)


# -- word lists ----------------------------------------------------------------------------------------
def test_answers_are_a_subset_of_the_valid_guesses() -> None:
    secret_words, guessable = answers(), valid_guesses()
    assert 1800 <= len(secret_words) <= 2500 and len(guessable) >= 10_000
    assert set(secret_words) <= guessable
    assert list(secret_words) == sorted(set(secret_words))
    assert all(re.fullmatch(r"[a-z]{5}", w) for w in guessable)
    assert {"crane", "slate", "raise", "apple"} <= guessable
    assert {"cakes", "asked"} <= guessable  # inflections are guessable


def test_word_list_files_are_small_sorted_and_clean() -> None:
    data = resources.files("openenv_train.envs.wordle") / "data"
    total = 0
    for name in ("answers.txt", "valid_guesses.txt"):
        raw = (data / name).read_bytes()
        total += len(raw)
        lines = raw.decode("ascii").splitlines()
        assert lines == sorted(set(lines)) and raw.endswith(b"\n")
    assert total < 200_000
    assert not [w for w, n in Counter(answers()).items() if n > 1]
