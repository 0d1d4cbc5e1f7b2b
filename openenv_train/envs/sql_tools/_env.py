"""SQLToolsEnvironment: answer a question about a small shop database through read-only SQL tools."""

from __future__ import annotations

from importlib import resources
from typing import Annotated, Any, ClassVar

from pydantic import Field

from ...core import CallToolObservation, ListToolsObservation, Observation, ToolError, ToolErrorType
from ...server import MCPEnvironment, ToolCallFailed, tool
from ._database import QueryTimeout, ReadOnlyDatabase
from ._models import SQLQuestionObservation, SQLToolsState
from ._questions import Question, pick_question
from ._scoring import answers_match

__all__ = ["SQLToolsEnvironment"]

Answer = str | int | float | list[str | int | float]


class SQLToolsEnvironment(MCPEnvironment):
    """Answer a question about a shop database with SQL tools; submit_answer pays 1.0 if right and ends it.

    Tools: ``get_question``, ``list_tables``, ``describe_table``, ``query`` (read-only, rows
    and time capped) and ``submit_answer``. ``reset(question_id=...)`` or ``reset(seed=...)``
    picks the question; the reset observation carries it too.

    Example:
        >>> from openenv_train.core import CallToolAction
        >>> env = SQLToolsEnvironment()
        >>> env.reset(question_id="q01").question
        'How many customers does the shop have?'
        >>> counted = env.step(CallToolAction(tool_name="query", arguments={"sql": "SELECT COUNT(*) FROM customers"}))
        >>> counted.result["data"]["rows"]
        [[60]]
        >>> done = env.step(CallToolAction(tool_name="submit_answer", arguments={"answer": 60}))
        >>> done.reward, done.done
        (1.0, True)
    """

    name = "sql_tools"
    observation_type: ClassVar[Any] = ListToolsObservation | CallToolObservation | SQLQuestionObservation
    state_type = SQLToolsState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")
    #: A query may run up to its time limit: keep it off the event loop.
    blocking = True
    max_rows: ClassVar[int] = 200
    time_limit_s: ClassVar[float] = 1.0
    _state: SQLToolsState

    def __init__(self) -> None:
        super().__init__()
        self._state = SQLToolsState()
        self._db = ReadOnlyDatabase(max_rows=self.max_rows, time_limit_s=self.time_limit_s)
        self._question: Question | None = None

    # -- episode ----------------------------------------------------------------------------------------
    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, episode_id: str | None = None, question_id: str | None = None
    ) -> SQLQuestionObservation:
        """Start an episode on question ``question_id``, else one drawn with ``seed``.

        Raises:
            ValueError: no such question id; the previous episode is kept.
        """
        question = pick_question(seed=seed, question_id=question_id)  # refuse before the episode changes
        super().reset(seed=seed, episode_id=episode_id, question=question)
        return SQLQuestionObservation(
            question_id=question.id,
            question=question.text,
            answer_format=question.answer_format,
            tables=self._db.tables(),
            reward=0.0,
            metadata={"question_id": question.id, "question": question.text},
        )

    def on_reset(self, *, seed: int | None = None, question: Question | None = None, **options: Any) -> None:
        self._question = question
        self._state = SQLToolsState(episode_id=self._state.episode_id, question_id=question.id if question else None)

    @property
    def state(self) -> SQLToolsState:
        return self._state

    def step(self, action: Any) -> Observation:
        """Run a tool step; every observation after the answer was submitted has ``done`` set."""
        obs = super().step(action)
        assert isinstance(obs, Observation), "sql_tools has only sync tools"
        if self._state.submitted:
            obs.done = True
        return obs

    def call_tool(self, tool_name: str, arguments: dict[str, Any]) -> Any:
        """Run a tool; refused once the answer is in, and a query past its time limit is a ``timeout``."""
        if self._state.submitted and tool_name in self.tools:
            raise ToolCallFailed(ToolError(
                error_type=ToolErrorType.EXECUTION_ERROR,
                message="the episode is over: the answer was submitted; call reset for a new question",
            ))
        try:
            return super().call_tool(tool_name, arguments)
        except ToolCallFailed as exc:
            if isinstance(exc.__cause__, QueryTimeout):
                raise ToolCallFailed(ToolError(error_type=ToolErrorType.TIMEOUT, message=str(exc.__cause__))) from None
            raise

    def reward_for(self, tool_name: str, arguments: dict[str, Any], value: Any) -> float | None:
        return float(value["reward"]) if tool_name == "submit_answer" else None

    def close(self) -> None:
        self._db.close()

    def _current(self) -> Question:
        if self._question is None:
            raise ValueError("no question yet: call reset first (options: seed, question_id)")
        return self._question

    # -- tools (get_question first: it is the one to call first) ----------------------------------------
    @tool
    def get_question(self) -> dict[str, str]:
        """The question to answer, its id, and how to format the answer."""
        question = self._current()
        return {"question_id": question.id, "question": question.text, "answer_format": question.answer_format}

    @tool
    def list_tables(self) -> list[str]:
        """Names of the database's tables."""
        return self._db.tables()

    @tool
    def describe_table(self, table: str) -> dict[str, Any]:
        """Columns (name, type, nullable, primary_key), foreign keys and row count of a table."""
        return self._db.describe(table)

    @tool
    def query(self, sql: Annotated[str, Field(min_length=1, max_length=10_000)]) -> dict[str, Any]:
        """Run one read-only SQLite statement (SELECT, WITH ... SELECT, PRAGMA table_info).

        Returns columns, rows (at most 200; ``truncated`` says when more matched) and row_count.
        Writes are refused, and a query running past 1 s is stopped.
        """
        return self._db.query(sql).as_dict()

    @tool
    def submit_answer(self, answer: Answer) -> dict[str, Any]:
        """Submit the final answer; ends the episode. Reward 1.0 if it matches the reference, else 0.0.

        A single value, or a list (JSON list or comma-separated text) when the question asks for several.
        """
        question = self._current()
        correct = answers_match(question.answer, answer)
        self._state.submitted, self._state.correct = True, correct
        return {"correct": correct, "reward": 1.0 if correct else 0.0, "expected": question.answer}
