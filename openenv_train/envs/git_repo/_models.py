"""Wire types of the git env: action, observation and state."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from ...core import Action, State
from ..run_limits import RunObservation

__all__ = ["MAX_COMMAND_CHARS", "CheckResult", "GitAction", "GitObservation", "GitState"]

MAX_COMMAND_CHARS = 20_000


class GitAction(Action):
    """A shell command run in the task's repository, or a submit that grades the repository as it is."""

    command: str = Field(default="", max_length=MAX_COMMAND_CHARS,
                         description="Shell command (/bin/sh -c) run with the repository as working directory.")
    submit: bool = Field(default=False, description="Grade the repository's state (after the command) and end the "
                                                    "episode.")

    @field_validator("command")
    @classmethod
    def _no_nul(cls, command: str) -> str:
        if "\0" in command:
            raise ValueError("command must not contain NUL characters")
        return command


class CheckResult(BaseModel):
    """One check of the repository's state and whether it held."""

    name: str
    passed: bool


class GitObservation(RunObservation):
    """The command's output, the task (on reset) and, after a submit, the checks of the repository."""

    task_id: str = Field(default="", description="Id of the task.")
    prompt: str = Field(default="", description="What to do to the repository (on reset only).")
    checks_passed: int | None = Field(default=None, description="Checks of the repository that held (after a submit).")
    checks_total: int | None = Field(default=None, description="Checks run (after a submit).")
    check_results: list[CheckResult] = Field(default_factory=list, description="Each check (after a submit).")


class GitState(State):
    """Episode state: the task, how many commands, and the grade once submitted."""

    task_id: str = ""
    commands: int = Field(default=0, description="Commands run so far.")
    submitted: bool = False
    reward: float | None = Field(default=None, description="Fraction of checks that held, once submitted.")
    wall_time_s: float = 0.0
