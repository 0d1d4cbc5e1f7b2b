"""Wire types of the sql_tools env beyond MCP's own: the reset observation and the state."""

from __future__ import annotations

from pydantic import Field

from ...core import Observation, State

__all__ = ["SQLQuestionObservation", "SQLToolsState"]


class SQLQuestionObservation(Observation):
    """The reset observation: the question to answer and the database's tables."""

    question_id: str = Field(default="", description="Id of the question (q01, q02, ...).")
    question: str = Field(default="", description="The question to answer with SQL.")
    answer_format: str = Field(default="", description="How submit_answer expects the answer.")
    tables: list[str] = Field(default_factory=list, description="Tables of the database.")


class SQLToolsState(State):
    """Episode state: the question and whether (and how well) it was answered."""

    question_id: str | None = None
    submitted: bool = False
    correct: bool | None = None
