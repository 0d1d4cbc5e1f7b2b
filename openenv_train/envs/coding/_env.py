"""CodingEnvironment: write a Python function in the OS sandbox; a submit runs hidden tests."""

from __future__ import annotations

import uuid
from importlib import resources

from ...sandbox import Sandbox
from ...server import Environment, TaskSplit, listed_split
from ..run_limits import DEFAULT_OUTPUT_BYTES, DEFAULT_WALL_TIME_S, OutputBytes, RunLimits, WallTime, open_sandbox, run_fields
from ._grader import grade
from ._models import CodingAction, CodingObservation, CodingState
from ._tasks import CodingTask, bundled_tasks, choose_task

__all__ = ["CodingEnvironment"]

_HOW = ("\n\nDefine `{function}` in Python. Send {{\"code\": ...}} to run code in your sandbox (files in the working "
        "directory persist for the episode); send {{\"code\": ..., \"submit\": true}} to grade that code with hidden "
        "tests, which ends the episode with the fraction passed as reward.")


class CodingEnvironment(Environment[CodingAction, CodingObservation, CodingState]):
    """Write a Python function in an OS sandbox; a submit runs hidden unit tests and pays the fraction passed.

    Every run happens in a bubblewrap sandbox (no network, capped time, memory, processes and output) whose
    scratch dir persists for the episode. A submit grades its code in a separate fresh sandbox, so earlier
    runs never see the hidden tests. ``reset`` picks a bundled task by ``task_id`` or ``seed``, or takes
    a custom ``task``; ``wall_time_s`` and ``max_output_bytes`` set the limits of each run.

    Args:
        wall_time_s: default wall-clock limit of each run in seconds (at most 60).
        max_output_bytes: default bytes kept of stdout and of stderr (16 KiB to 1 MiB).
    """

    name = "coding"
    opens_sandboxes = True
    action_type = CodingAction
    observation_type = CodingObservation
    state_type = CodingState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")

    def __init__(self, *, wall_time_s: float = DEFAULT_WALL_TIME_S, max_output_bytes: int = DEFAULT_OUTPUT_BYTES) -> None:
        self._defaults = RunLimits(wall_time_s=wall_time_s, max_output_bytes=max_output_bytes)
        self._limits = self._defaults
        self._sandbox: Sandbox | None = None
        self._task: CodingTask | None = None
        self._state = CodingState()

    async def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
                    task_id: str | None = None, task: CodingTask | None = None,
                    wall_time_s: WallTime | None = None, max_output_bytes: OutputBytes | None = None) -> CodingObservation:
        """Start an episode on a task (custom ``task``, bundled ``task_id``, or drawn by ``seed``) in a new sandbox.

        Raises:
            ValueError: a bad task, task id or limit.
            SandboxUnavailable: sandboxes cannot run here (the message names the fix).
        """
        chosen = choose_task(task_id=task_id, seed=seed, task=task)
        limits = self._defaults.with_options(wall_time_s=wall_time_s, max_output_bytes=max_output_bytes)
        sandbox = await open_sandbox(limits.sandbox_config(), self.name or "coding")
        self._close_sandbox()
        self._sandbox, self._task, self._limits = sandbox, chosen, limits
        self._state = CodingState(
            episode_id=episode_id or uuid.uuid4().hex, task_id=chosen.id, function_name=chosen.function,
            tests_total=len(chosen.tests), wall_time_s=limits.wall_time_s, max_output_bytes=limits.max_output_bytes,
        )
        return CodingObservation(task_id=chosen.id, prompt=chosen.prompt + _HOW.format(function=chosen.function),
                                 function_name=chosen.function, reward=0.0)

    def task_splits(self) -> list[TaskSplit]:
        """The bundled tasks: every fourth one (in file order) is ``test``, the rest ``train``; a task resets with
        ``task_id``."""
        ids = [task.id for task in bundled_tasks()]
        return [listed_split("train", "train", [t for i, t in enumerate(ids) if i % 4 != 3], "task_id"),
                listed_split("test", "test", ids[3::4], "task_id")]

    async def step(self, action: CodingAction) -> CodingObservation:
        """Run ``action.code`` in the sandbox, or grade it when ``action.submit`` (which ends the episode)."""
        if self._sandbox is None or self._task is None:
            return self._rejected("no episode is running; call reset() first")
        if self._state.submitted:
            return self._rejected("the episode already ended with a submit; call reset() to start another")
        if action.submit:
            return await self._submit(action.code, self._task)
        result = await self._sandbox.arun_python(action.code, timeout_s=self._limits.wall_time_s)
        self._state.step_count += 1
        self._state.runs += 1
        return self._observation(**run_fields(result), reward=0.0)

    async def _submit(self, code: str, task: CodingTask) -> CodingObservation:
        graded = await grade(code, task, self._limits)
        state = self._state
        state.step_count += 1
        state.submitted = True
        state.tests_passed = graded.passed
        state.reward = graded.reward
        return self._observation(
            stdout=graded.output, stderr=graded.note, timed_out=graded.timed_out, truncated=graded.output_truncated,
            tests_passed=graded.passed, tests_total=len(graded.results), test_results=graded.results,
            reward=graded.reward, done=True,
        )

    def _rejected(self, why: str) -> CodingObservation:
        """An observation for an action that ran nothing; the episode is unchanged."""
        return self._observation(error=why, done=self._state.submitted)

    def _observation(self, **fields: object) -> CodingObservation:
        return CodingObservation(task_id=self._state.task_id, function_name=self._state.function_name,
                                 **fields)  # type: ignore[arg-type]

    @property
    def state(self) -> CodingState:
        return self._state

    def close(self) -> None:
        """Delete the episode's sandbox and its scratch dir."""
        self._close_sandbox()

    def _close_sandbox(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
