"""The question bank: questions with reference SQL, answered on the shipped data when first loaded.

``data/questions.json`` lists ``{"id", "question", "sql"}``. The answer is whatever ``sql``
returns: one row of one column is a single value, several rows of one column an ordered list.
Questions asking for "the most" or "the least" were checked to have no ties on the shipped data.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ...core import did_you_mean
from ._database import ReadOnlyDatabase

__all__ = ["Question", "pick_question", "question_bank"]

_bank: dict[str, Question] | None = None
_bank_lock = threading.Lock()


@dataclass(frozen=True)
class Question:
    """A question, the SQL that answers it, and that SQL's answer on the shipped data."""

    id: str
    text: str
    sql: str
    answer: str | int | float | list[str | int | float]

    @property
    def answer_format(self) -> str:
        """How the answer should be submitted."""
        if isinstance(self.answer, list):
            return ("a list of values in the order the question asks for: a JSON list, or text with the "
                    "values comma-separated or one per line")
        return ("a single value: a number (compared with relative tolerance 1e-4) or a text "
                "(compared ignoring case, surrounding whitespace and quotes)")


def _answer(db: ReadOnlyDatabase, qid: str, sql: str) -> str | int | float | list[str | int | float]:
    result = db.query(sql)  # through the agents' own read-only path, so every reference SQL is one they could run
    rows = result.rows
    if result.truncated:
        raise ValueError(f"question {qid}: its SQL returns more than {db.max_rows} rows")
    if not rows or any(len(row) != 1 or row[0] is None for row in rows):
        raise ValueError(f"question {qid}: its SQL must return one non-NULL column and at least one row, got {rows!r}")
    values: list[Any] = [row[0] for row in rows]
    return values[0] if len(values) == 1 else values


def _load() -> dict[str, Question]:
    text = resources.files(__package__).joinpath("data").joinpath("questions.json").read_text(encoding="utf-8")
    bank: dict[str, Question] = {}
    db = ReadOnlyDatabase(max_rows=1_000, time_limit_s=10.0)
    try:
        for item in json.loads(text):
            qid, sql = str(item["id"]), str(item["sql"]).strip()
            if qid in bank:
                raise ValueError(f"question id {qid!r} appears twice in questions.json")
            bank[qid] = Question(qid, str(item["question"]).strip(), sql, _answer(db, qid, sql))
    finally:
        db.close()
    return bank


def question_bank() -> dict[str, Question]:
    """Every question by id, in file order (answers computed on first use)."""
    global _bank
    with _bank_lock:
        if _bank is None:
            _bank = _load()
        return _bank


def pick_question(*, seed: int | None = None, question_id: str | None = None) -> Question:
    """The question ``question_id``, else one drawn with ``seed`` (at random without one).

    Raises:
        ValueError: no such question id (the message suggests close ids and the range).
    """
    bank = question_bank()
    if question_id is not None:
        question = bank.get(question_id)
        if question is None:
            hint = did_you_mean(question_id, bank)
            ids = list(bank)
            raise ValueError(f"no question {question_id!r}{hint} Ids run {ids[0]}..{ids[-1]}")
        return question
    return random.Random(seed).choice(list(bank.values()))
