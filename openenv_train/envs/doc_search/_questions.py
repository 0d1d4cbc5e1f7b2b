"""The questions: each answered by a name or value found in one document of the corpus; answers are compared
normalised (case, quotes, a call's ``()``, a module prefix; numbers by value)."""

from __future__ import annotations

import functools
import json
import math
import random
import re
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from ...core import did_you_mean

__all__ = ["Question", "answer_matches", "bundled_questions", "choose_question"]

_SPACES = re.compile(r"\s+")


class Question(BaseModel):
    """A question, the answers accepted, and the document that holds the answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=100)
    text: str = Field(min_length=1, max_length=2_000)
    answers: tuple[str, ...] = Field(min_length=1, description="Accepted answers (compared normalised).")
    evidence: str = Field(min_length=1, description="Id of the document that holds the answer.")


@functools.cache
def bundled_questions() -> tuple[Question, ...]:
    """The questions shipped with the env (``questions.json``), in file order."""
    text = resources.files(__package__).joinpath("questions.json").read_text(encoding="utf-8")
    return tuple(Question.model_validate(item) for item in json.loads(text))


def choose_question(*, question_id: str | None = None, seed: int | None = None) -> Question:
    """The bundled question ``question_id``, else one drawn by ``seed`` (at random without either).

    Raises:
        ValueError: an unknown ``question_id`` (close matches named).
    """
    by_id = {q.id: q for q in bundled_questions()}
    if question_id is None:
        draw = random.Random(seed) if seed is not None else random.SystemRandom()
        return list(by_id.values())[draw.randrange(len(by_id))]
    if question_id not in by_id:
        raise ValueError(f"no question {question_id!r}{did_you_mean(question_id, by_id, otherwise='.')} "
                         f"Known: {', '.join(by_id)}")
    return by_id[question_id]


def _normal(value: object) -> str:
    text, previous = str(value), None
    while text != previous:  # peel quotes, backticks, a final period and a call's () in any order
        previous = text
        text = text.strip().strip("\"'`").rstrip(".").removesuffix("()")
    return _SPACES.sub(" ", text).casefold()


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def answer_matches(accepted: tuple[str, ...], submitted: object) -> bool:
    """Whether ``submitted`` is one of ``accepted``: same text once normalised, the same number, or a
    dotted name whose last part matches (``math.isqrt`` for ``isqrt``)."""
    given = _normal(submitted)
    value = _number(given)
    for answer in accepted:
        wanted = _normal(answer)
        expected = _number(wanted)
        if expected is not None and value is not None:
            if math.isclose(value, expected, rel_tol=1e-9):
                return True
        elif given == wanted or (value is None and given.rsplit(".", 1)[-1] == wanted):
            return True
    return False
