"""ReplEnvironment: a persistent Python session in the OS sandbox; ``FINAL(answer)`` answers the question."""

from __future__ import annotations

import functools
import json
import secrets
import uuid
from importlib import resources
from typing import Annotated, Any

from pydantic import Field

from ...sandbox import Sandbox, SandboxResult
from ...server import Environment
from ..run_limits import DEFAULT_OUTPUT_BYTES, DEFAULT_WALL_TIME_S, OutputBytes, RunLimits, WallTime, open_sandbox
from ._answers import answers_match
from ._models import ReplAction, ReplObservation, ReplState
from ._questions import ReplQuestion, choose_question

__all__ = ["DEFAULT_MAX_STEPS", "MAX_MAX_STEPS", "ReplEnvironment"]

DEFAULT_MAX_STEPS = 20
MAX_MAX_STEPS = 200
STATE_FILE = ".repl/state.pkl"
"""Where the runner keeps the session's variables, relative to the scratch dir."""

MaxSteps = Annotated[int, Field(ge=1, le=MAX_MAX_STEPS, description="Cells before the episode is truncated.")]

_HOW = ("\n\nAnswer by running Python: send {{\"code\": ...}}; each cell runs in the same session, so variables, "
        "functions and imports persist (as in a notebook; the value of a last bare expression is printed). "
        "Call FINAL(answer) in a cell to give your answer, which ends the episode. You have {steps} cells.")


@functools.cache
def _runner_source() -> str:
    return resources.files(__package__).joinpath("_cell.py").read_text(encoding="utf-8")


class ReplEnvironment(Environment[ReplAction, ReplObservation, ReplState]):
    """Answer a question with a persistent Python session in the OS sandbox; ``FINAL(answer)`` pays 1.0 if right.

    Each cell runs in a bubblewrap sandbox (no network, capped time, memory and output). Variables persist
    from cell to cell: the runner pickles them (with cloudpickle, so functions and classes too) into the
    episode's scratch dir after each cell and loads them before the next. ``reset`` picks a bundled question
    by ``task_id`` or ``seed``, or takes a custom ``question`` and ``answer``; the episode is truncated
    after ``max_steps`` cells.

    Args:
        wall_time_s: default wall-clock limit of each cell in seconds (at most 60).
        max_output_bytes: default bytes kept of stdout and of stderr (16 KiB to 1 MiB).
        max_steps: default number of cells per episode (at most 200).
    """

    name = "repl"
    opens_sandboxes = True
    action_type = ReplAction
    observation_type = ReplObservation
    state_type = ReplState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")

    def __init__(self, *, wall_time_s: float = DEFAULT_WALL_TIME_S, max_output_bytes: int = DEFAULT_OUTPUT_BYTES,
                 max_steps: int = DEFAULT_MAX_STEPS) -> None:
        if not 1 <= max_steps <= MAX_MAX_STEPS:
            raise ValueError(f"max_steps must be in [1, {MAX_MAX_STEPS}], got {max_steps}")
        self._defaults = RunLimits(wall_time_s=wall_time_s, max_output_bytes=max_output_bytes)
        self._default_max_steps = max_steps
        self._limits = self._defaults
        self._sandbox: Sandbox | None = None
        self._question: ReplQuestion | None = None
        self._state = ReplState()

    async def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
                    task_id: str | None = None, question: str | None = None, answer: int | float | str | None = None,
                    max_steps: MaxSteps | None = None, wall_time_s: WallTime | None = None,
                    max_output_bytes: OutputBytes | None = None) -> ReplObservation:
        """Start an episode on a question (custom ``question``+``answer``, bundled ``task_id``, or by ``seed``).

        Raises:
            ValueError: a bad question, task id or limit.
            SandboxUnavailable: sandboxes cannot run here (the message names the fix).
        """
        chosen = choose_question(task_id=task_id, seed=seed, question=question, answer=answer)
        limits = self._defaults.with_options(wall_time_s=wall_time_s, max_output_bytes=max_output_bytes)
        steps = self._default_max_steps if max_steps is None else max_steps
        if not 1 <= steps <= MAX_MAX_STEPS:
            raise ValueError(f"max_steps must be in [1, {MAX_MAX_STEPS}], got {steps}")
        sandbox = await open_sandbox(limits.sandbox_config(), self.name or "repl")
        self._close_sandbox()
        self._sandbox, self._question, self._limits = sandbox, chosen, limits
        self._state = ReplState(episode_id=episode_id or uuid.uuid4().hex, task_id=chosen.id, max_steps=steps,
                                wall_time_s=limits.wall_time_s, max_output_bytes=limits.max_output_bytes)
        return ReplObservation(task_id=chosen.id, question=chosen.question + _HOW.format(steps=steps),
                               steps_left=steps, reward=0.0)

    async def step(self, action: ReplAction) -> ReplObservation:
        """Run one cell in the session; a ``FINAL(answer)`` call or the step limit ends the episode."""
        if self._sandbox is None or self._question is None:
            return self._rejected("no episode is running; call reset() first")
        if self._state.finished:
            return self._rejected("the episode is over; call reset() to start another")
        nonce = f"@@repl-{secrets.token_hex(16)}@@"
        payload = {"nonce": nonce, "code": action.code, "state_file": STATE_FILE,
                   "output_cap": self._limits.max_output_bytes}
        result = await self._sandbox.arun([self._sandbox.config.python, "-I", "-c", _runner_source()],
                                          stdin=json.dumps(payload), timeout_s=self._limits.wall_time_s)
        stdout, report = _split_report(result, nonce)
        state = self._state
        state.step_count += 1
        fields: dict[str, Any] = {
            "stdout": stdout, "stderr": result.stderr, "exit_code": result.exit_code, "timed_out": result.timed_out,
            "killed_reason": result.killed_reason, "variables": report.get("variables", {}),
            "dropped": report.get("dropped", []), "notes": report.get("notes", []),
            "truncated": result.truncated or bool(report.get("stdout_truncated") or report.get("stderr_truncated")),
        }
        if report.get("has_final"):
            state.finished, state.answer = True, report.get("final")
            state.correct = answers_match(state.answer, self._question.answer)
            state.reward = 1.0 if state.correct else 0.0
            return self._observation(**fields, answer=state.answer, correct=state.correct, reward=state.reward,
                                     done=True, expected_answer=self._question.answer)
        if state.step_count >= state.max_steps:
            state.finished, state.reward = True, 0.0
            return self._observation(**fields, max_steps_reached=True, reward=0.0, done=True,
                                     expected_answer=self._question.answer)
        return self._observation(**fields, reward=0.0)

    def _rejected(self, why: str) -> ReplObservation:
        """An observation for an action that ran nothing; the episode is unchanged."""
        return self._observation(error=why, done=self._state.finished)

    def _observation(self, **fields: Any) -> ReplObservation:
        state = self._state
        return ReplObservation(task_id=state.task_id, steps_left=max(state.max_steps - state.step_count, 0), **fields)

    @property
    def state(self) -> ReplState:
        return self._state

    def close(self) -> None:
        """Delete the episode's sandbox and its scratch dir."""
        self._close_sandbox()

    def _close_sandbox(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


def _split_report(result: SandboxResult, nonce: str) -> tuple[str, dict[str, Any]]:
    """The cell's own stdout and the runner's report (with a note when the runner could not report)."""
    before, found, after = result.stdout.rpartition("\n" + nonce)
    if found:
        try:
            report = json.loads(after)
        except ValueError:
            report = None
        if isinstance(report, dict):
            return before, report
    why = "it ran out of time" if result.timed_out else f"it was killed ({result.killed_reason or result.exit_code})"
    note = (f"the cell did not finish ({why}); the session's variables are as they were before it"
            if result.timed_out or result.killed_reason else
            f"the cell's runner did not report (exit code {result.exit_code}); the session's variables may not "
            "have been saved")
    return result.stdout, {"notes": [note]}
