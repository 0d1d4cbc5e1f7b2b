"""Wire types of the reasoning_gym env: one answer per episode."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ...core import Action, Observation, State

__all__ = ["ReasoningGymAction", "ReasoningGymObservation", "ReasoningGymState"]

#: Longest answer accepted; a longer one is a validation error, not something to score.
MAX_ANSWER_CHARS = 100_000


class ReasoningGymAction(Action):
    """Answer the episode's question; the one answer ends the episode."""

    answer: str = Field(
        default="",
        max_length=MAX_ANSWER_CHARS,
        description="The final answer; if it holds <answer>...</answer>, the last such span is scored.",
    )


class ReasoningGymObservation(Observation):
    """The question, and once answered, its score and the reference answer."""

    question: str = Field(default="", description="The generated question.")
    dataset: str = Field(default="", description="The reasoning_gym dataset it came from.")
    answer_format: str = Field(default="", description="How to phrase the answer.")
    score: float | None = Field(default=None, description="score_answer of the answer in [0, 1]; null until answered.")
    correct_answer: str | None = Field(
        default=None,
        description="The dataset's reference answer, shown once the episode ends (null for datasets that "
        "verify answers instead of comparing them).",
    )
    error: str | None = Field(default=None, description="Why the last action was refused, or null.")


class ReasoningGymState(State):
    """Episode state: which question (dataset, config, seed, index) and whether it was answered."""

    dataset: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    index: int = 0
    answered: bool = False
    score: float | None = None
