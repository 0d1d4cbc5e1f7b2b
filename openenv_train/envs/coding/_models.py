"""Wire types of the coding env: action, observation and state."""

from __future__ import annotations

from pydantic import Field, field_validator

from ...core import Action, State
from ..run_limits import RunObservation
from ._grader import CaseResult

__all__ = ["MAX_CODE_BYTES", "MAX_CODE_CHARS", "CodingAction", "CodingObservation", "CodingState"]

MAX_CODE_CHARS = 100_000
MAX_CODE_BYTES = 120_000
"""Code travels as one command-line argument, which Linux caps at 128 KiB."""


class CodingAction(Action):
    """Run Python code in the episode's sandbox, or submit it for grading by the hidden tests."""

    code: str = Field(default="", max_length=MAX_CODE_CHARS, description="Python source to run (python -c).")
    submit: bool = Field(default=False, description="Grade this code with the hidden tests and end the episode.")

    @field_validator("code")
    @classmethod
    def _fits_a_command_line(cls, code: str) -> str:
        if "\0" in code:
            raise ValueError("code must not contain NUL characters")
        size = len(code.encode("utf-8", "surrogatepass"))
        if size > MAX_CODE_BYTES:
            raise ValueError(f"code must be at most {MAX_CODE_BYTES} bytes of UTF-8, got {size}")
        return code


class CodingObservation(RunObservation):
    """The run's output, the task (on reset) and, after a submit, the hidden tests' outcome."""

    task_id: str = Field(default="", description="Id of the task.")
    prompt: str = Field(default="", description="The task: what to write (on reset only).")
    function_name: str = Field(default="", description="Name of the function the hidden tests call.")
    tests_passed: int | None = Field(default=None, description="Hidden tests passed (after a submit).")
    tests_total: int | None = Field(default=None, description="Hidden tests run (after a submit).")
    test_results: list[CaseResult] = Field(default_factory=list, description="Each hidden test's outcome (after a submit).")


class CodingState(State):
    """Episode state: the task, how many runs, and the grade once submitted."""

    task_id: str = ""
    function_name: str = ""
    runs: int = Field(default=0, description="Plain code runs so far.")
    submitted: bool = False
    tests_passed: int | None = None
    tests_total: int = 0
    reward: float | None = Field(default=None, description="Fraction of hidden tests passed, once submitted.")
    wall_time_s: float = 0.0
    max_output_bytes: int = 0
