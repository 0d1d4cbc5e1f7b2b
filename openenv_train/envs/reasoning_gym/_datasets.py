"""Questions and scores from the ``reasoning-gym`` package, imported on first use (it is heavy)."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from ...core import did_you_mean

__all__ = [
    "DEFAULT_DATASET",
    "Question",
    "answer_format",
    "dataset_names",
    "extract_answer",
    "make_question",
    "score_answer",
]

DEFAULT_DATASET = "basic_arithmetic"
#: Config keys the env sets itself from its reset options.
RESERVED_CONFIG_KEYS = frozenset({"seed", "size"})
#: Largest item index; reasoning_gym sizes its virtual dataset from it.
MAX_INDEX = 10**9

_ANSWER_TAG = re.compile(r"<answer>\s?(.*?)\s?</answer>", re.DOTALL)


@cache
def _rg() -> ModuleType:
    try:
        return importlib.import_module("reasoning_gym")
    except ImportError as exc:
        raise RuntimeError(
            "the reasoning_gym env needs the 'reasoning-gym' package: "
            "pip install 'openenv-train[reasoning-gym]' (or 'reasoning-gym>=0.1.25,<0.2')"
        ) from exc


def dataset_names() -> list[str]:
    """Every dataset name reasoning_gym registers, sorted (imports reasoning_gym)."""
    _rg()
    factory = importlib.import_module("reasoning_gym.factory")
    return sorted(factory.DATASETS)


@dataclass(frozen=True)
class Question:
    """One generated item and the dataset object that scores answers to it."""

    dataset: str
    text: str
    answer: str | None
    entry: dict[str, Any]
    scorer: Any


def make_question(dataset: str, config: dict[str, Any], seed: int, index: int) -> Question:
    """Generate item ``index`` of ``dataset`` built with ``config`` and ``seed``.

    Raises:
        ValueError: unknown dataset (with close matches), a reserved or invalid config key,
            a config the dataset rejects, or an index out of range.
    """
    names = dataset_names()
    if dataset not in names:
        hint = did_you_mean(dataset, names)
        raise ValueError(f"no reasoning_gym dataset {dataset!r}{hint} Known: {', '.join(names)}")
    reserved = RESERVED_CONFIG_KEYS & set(config)
    if reserved:
        raise ValueError(f"config may not set {sorted(reserved)}: pass seed and index as reset options instead")
    if not 0 <= index <= MAX_INDEX:
        raise ValueError(f"index {index} is out of range: use 0..{MAX_INDEX}")
    try:
        scorer = _rg().create_dataset(dataset, seed=seed, size=index + 1, **config)
    except (TypeError, AssertionError, ValueError) as exc:  # dataclass fields and the dataset's own checks
        raise ValueError(f"invalid config {config!r} for dataset {dataset!r}: {exc}") from None
    entry = scorer[index]
    answer = entry.get("answer")
    return Question(dataset, str(entry["question"]), None if answer is None else str(answer), entry, scorer)


def extract_answer(raw: str) -> str:
    """The text to score: the last ``<answer>...</answer>`` span if any, else the whole answer, stripped.

    Example:
        >>> extract_answer("I think... <answer> 42 </answer>")
        '42'
        >>> extract_answer(" 7 ")
        '7'
    """
    spans = _ANSWER_TAG.findall(raw)
    return (spans[-1] if spans else raw).strip()


def score_answer(question: Question, raw: str) -> tuple[float, str | None]:
    """The dataset's ``score_answer`` of ``raw``, clamped to [0, 1], and a note if scoring failed.

    A scorer that raises on a malformed answer (some parse numbers) scores it 0.0.
    """
    try:
        value = float(question.scorer.score_answer(extract_answer(raw), question.entry))
    except Exception as exc:  # the answer was malformed for this dataset: that is a wrong answer
        return 0.0, f"score_answer raised {type(exc).__name__}: {exc}; scored 0.0"
    return min(1.0, max(0.0, value)), None


def answer_format(question: Question) -> str:
    """A hint on phrasing the answer, the same for every question of a dataset kind."""
    scoring = (
        "any answer that satisfies the question scores 1.0 (it is verified, not compared)"
        if question.answer is None
        else "an exact match scores 1.0, near misses may get partial credit"
    )
    return (
        "Reply with the final answer only, written the way the question asks (a value, not a sentence); "
        "if the reply holds <answer>...</answer>, only the last such span is scored. "
        f"Scored by reasoning_gym's {question.dataset} score_answer: {scoring}."
    )
