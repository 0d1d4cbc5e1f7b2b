"""Wire types of the repl env: action, observation and state."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ...core import Action, State
from ..run_limits import RunObservation

__all__ = ["MAX_CELL_CHARS", "ReplAction", "ReplObservation", "ReplState"]

MAX_CELL_CHARS = 100_000


class ReplAction(Action):
    """One cell of Python, run in the episode's persistent session; ``FINAL(answer)`` answers the question."""

    code: str = Field(default="", max_length=MAX_CELL_CHARS, description="Python source of the cell.")


class ReplObservation(RunObservation):
    """The cell's output and the session's variables; the answer and its grade once FINAL was called."""

    task_id: str = Field(default="", description="Id of the question.")
    question: str = Field(default="", description="The question and how to answer it (on reset only).")
    variables: dict[str, str] = Field(default_factory=dict, description="Names kept for the next cell and their types.")
    dropped: list[str] = Field(default_factory=list, description="Names this cell lost: their values cannot be pickled.")
    notes: list[str] = Field(default_factory=list, description="Problems keeping the session's variables, if any.")
    answer: Any = Field(default=None, description="The value given to FINAL (when it was called).")
    expected_answer: Any = Field(default=None, description="The right answer, revealed once the episode is over.")
    correct: bool | None = Field(default=None, description="Whether the answer matched (after FINAL).")
    max_steps_reached: bool = Field(default=False, description="The episode ended by its step limit, not by FINAL.")
    steps_left: int = Field(default=0, description="Cells left before the step limit ends the episode.")


class ReplState(State):
    """Episode state: the question, the step limit and the answer once given."""

    task_id: str = ""
    max_steps: int = 0
    finished: bool = False
    answer: Any = None
    correct: bool | None = None
    reward: float | None = None
    wall_time_s: float = 0.0
    max_output_bytes: int = 0
