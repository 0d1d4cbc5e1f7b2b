"""Wire types of the doc_search env beyond MCP's own: the reset observation and the state."""

from __future__ import annotations

from pydantic import Field

from ...core import Observation, State

__all__ = ["DocSearchQuestionObservation", "DocSearchState"]


class DocSearchQuestionObservation(Observation):
    """The reset observation: the question and what the corpus holds."""

    question_id: str = Field(default="", description="Id of the question.")
    question: str = Field(default="", description="The question; its answer is in one document of the corpus.")
    corpus: str = Field(default="", description="What the corpus is (its source and licence).")
    documents: int = Field(default=0, description="Documents in the corpus.")


class DocSearchState(State):
    """Episode state: the question, the searches and fetches made, and the grade once submitted."""

    question_id: str | None = None
    searches: int = 0
    fetches: int = 0
    submitted: bool = False
    correct: bool | None = None
