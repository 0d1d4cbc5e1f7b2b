"""Wire types of the jupyter env: action, observation and state."""

from __future__ import annotations

from pydantic import Field

from ...core import Action, Observation, State

__all__ = ["MAX_CELL_CHARS", "JupyterAction", "JupyterObservation", "JupyterState"]

MAX_CELL_CHARS = 100_000


class JupyterAction(Action):
    """One cell run in the episode's kernel, or an answer to the question (which ends the episode)."""

    code: str = Field(default="", max_length=MAX_CELL_CHARS, description="Python source of the cell.")
    answer: str | None = Field(default=None, max_length=10_000,
                               description="The answer to the question; ends the episode (after the cell, if any).")


class JupyterObservation(Observation):
    """What the cell printed, returned, displayed and raised; the question on reset; the grade after an answer."""

    task_id: str = Field(default="", description="Id of the question.")
    question: str = Field(default="", description="The question and how to answer (on reset only).")
    stdout: str = Field(default="", description="The cell's stdout stream.")
    stderr: str = Field(default="", description="The cell's stderr stream.")
    result: str | None = Field(default=None, description="text/plain of the cell's value (its last bare expression).")
    displays: list[str] = Field(default_factory=list, description="text/plain of each display_data output.")
    error_name: str | None = Field(default=None, description="The exception the cell raised (e.g. ZeroDivisionError).")
    error_value: str | None = Field(default=None, description="Its message.")
    traceback: str = Field(default="", description="Its traceback, without colour codes.")
    execution_count: int | None = Field(default=None, description="The kernel's cell counter.")
    timed_out: bool = Field(default=False, description="The cell ran past the time limit and was interrupted.")
    kernel_restarted: bool = Field(default=False,
                                   description="The kernel died or hung and was replaced: its variables are gone.")
    correct: bool | None = Field(default=None, description="Whether the answer matched (after an answer).")
    error: str | None = Field(default=None, description="Why the action was rejected, else null.")


class JupyterState(State):
    """Episode state: the question, cells run, kernel restarts and the grade."""

    task_id: str = ""
    cells: int = 0
    restarts: int = 0
    cell_timeout_s: float = 0.0
    answered: bool = False
    reward: float | None = None
