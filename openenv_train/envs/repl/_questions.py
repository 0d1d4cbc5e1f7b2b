"""REPL questions: a question with a known answer; the bundled set and how one is chosen."""

from __future__ import annotations

import functools
import json
import random
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from ...core import did_you_mean

__all__ = ["ReplQuestion", "bundled_questions", "choose_question"]


class ReplQuestion(BaseModel):
    """A question to answer with ``FINAL(answer)``, and the answer that pays 1.0."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(default="custom", min_length=1, max_length=100)
    question: str = Field(min_length=1, max_length=20_000)
    answer: int | float | str = Field(description="The expected answer (numbers compare by value, text normalised).")


@functools.cache
def bundled_questions() -> tuple[ReplQuestion, ...]:
    """The questions shipped with the env (``questions.json``), in file order."""
    text = resources.files(__package__).joinpath("questions.json").read_text(encoding="utf-8")
    return tuple(ReplQuestion.model_validate(item) for item in json.loads(text))


def choose_question(*, task_id: str | None = None, seed: int | None = None, question: str | None = None,
                    answer: int | float | str | None = None) -> ReplQuestion:
    """The question of an episode: custom ``question`` + ``answer``, else bundled ``task_id``, else drawn by ``seed``.

    Raises:
        ValueError: a question without an answer (or the reverse), both a custom question and ``task_id``,
            or an unknown ``task_id``.
    """
    if (question is None) != (answer is None):
        raise ValueError("a custom question needs both options: question (str) and answer (the expected value)")
    if question is not None:
        if task_id is not None:
            raise ValueError("pass either question+answer (a custom question) or task_id (a bundled one), not both")
        return ReplQuestion(question=question, answer=answer)  # type: ignore[arg-type]
    questions = bundled_questions()
    if task_id is not None:
        found = next((q for q in questions if q.id == task_id), None)
        if found is None:
            ids = [q.id for q in questions]
            hint = did_you_mean(task_id, ids, otherwise=".")
            raise ValueError(f"no bundled repl question {task_id!r}{hint} Known: {', '.join(ids)}")
        return found
    rng = random.Random(seed) if seed is not None else random.SystemRandom()
    return questions[rng.randrange(len(questions))]
