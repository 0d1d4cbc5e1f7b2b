"""Wire types of the terminal env: action, observation and state."""

from __future__ import annotations

from pydantic import Field

from ...core import Action, Observation, State

__all__ = ["MAX_KEYSTROKE_CHARS", "TerminalAction", "TerminalObservation", "TerminalState"]

MAX_KEYSTROKE_CHARS = 10_000


class TerminalAction(Action):
    """Keystrokes typed into the terminal, then the screen once it settles; or a submit that runs the task's check."""

    keystrokes: str = Field(default="", max_length=MAX_KEYSTROKE_CHARS,
                            description='Text typed as it is; each "\\n" presses Enter.')
    keys: list[str] = Field(default_factory=list, max_length=50,
                            description='tmux key names pressed after the text: "C-c", "Up", "Tab", "Escape", "BSpace".')
    wait_s: float = Field(default=1.0, gt=0, le=30,
                          description="Seconds to wait at most for the shell to go idle and the screen to settle.")
    submit: bool = Field(default=False, description="Run the task's check (after the keystrokes) and end the episode.")


class TerminalObservation(Observation):
    """The screen (text, cursor, whether a command still runs), the task on reset, and the check after a submit."""

    screen: str = Field(default="", description="The terminal's visible text, trailing blank lines dropped.")
    cursor: list[int] = Field(default_factory=lambda: [0, 0], description="Cursor column and row.")
    busy: bool = Field(default=False, description="A command still runs in the foreground (send C-c to stop it).")
    task_id: str = Field(default="", description="Id of the task.")
    prompt: str = Field(default="", description="What to do (on reset only).")
    passed: bool | None = Field(default=None, description="Whether the task's check passed (after a submit).")
    check_output: str = Field(default="", description="What the check printed (after a submit).")
    error: str | None = Field(default=None, description="Why the action was rejected or the terminal died, else null.")


class TerminalState(State):
    """Episode state: the task, the terminal's size and the outcome once submitted."""

    task_id: str = ""
    width: int = 0
    height: int = 0
    max_steps: int = 0
    submitted: bool = False
    reward: float | None = None
