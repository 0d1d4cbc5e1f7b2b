"""JupyterEnvironment: answer a question with a real Jupyter kernel per session inside the OS sandbox."""

from __future__ import annotations

import asyncio
import uuid
from importlib import resources
from typing import Annotated

from pydantic import Field

from ...sandbox import SandboxConfig, SandboxLimits, SandboxUnavailable, sandbox_available
from ...server import Environment, TaskSplit, listed_split
from ..repl import ReplQuestion, answers_match, bundled_questions, choose_question
from ..run_limits import answer_keys
from ._kernel import CellRun, KernelDied, SandboxedKernel
from ._models import JupyterAction, JupyterObservation, JupyterState

__all__ = ["JupyterEnvironment", "kernel_limits"]

GiB = 2**30
MAX_CELL_TIMEOUT_S = 60.0
CellTimeout = Annotated[float, Field(gt=0, le=MAX_CELL_TIMEOUT_S, description="Seconds one cell may run.")]

_HOW = ("\n\nYou have a Jupyter (IPython) kernel: send {\"code\": ...} to run a cell (variables persist; the last bare "
        "expression is the cell's result). Send {\"answer\": \"...\"} to answer, which ends the episode (1.0 if "
        "right).")


def kernel_limits() -> SandboxLimits:
    """Limits of a kernel's sandbox: 2 GiB of address space per process, no CPU-time cap (the kernel lives for the
    episode; each cell has its own time limit), 128 threads and processes, 64 MiB of files."""
    return SandboxLimits(wall_time_s=MAX_CELL_TIMEOUT_S, cpu_time_s=None, memory_bytes=2 * GiB, max_processes=128,
                         max_open_files=1024, scratch_bytes=64 * 2**20)


class JupyterEnvironment(Environment[JupyterAction, JupyterObservation, JupyterState]):
    """Answer a question by running cells in a real ipykernel that runs inside a bubblewrap sandbox.

    The kernel's channels cross the sandbox (which has no network) as ZeroMQ IPC sockets in a bind-mounted folder.
    A cell past its time limit is interrupted (``KeyboardInterrupt``, the kernel and its variables live on); a
    kernel that dies or ignores the interrupt is replaced by a fresh one (``kernel_restarted``). Closing the
    session kills the kernel with its sandbox. The questions are the repl env's.

    Args:
        cell_timeout_s: default seconds a cell may run (at most 60).
        max_steps: cells before the episode ends unanswered.
    """

    name = "jupyter"
    opens_sandboxes = True
    action_type = JupyterAction
    observation_type = JupyterObservation
    state_type = JupyterState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")

    def __init__(self, *, cell_timeout_s: float = 10.0, max_steps: int = 30) -> None:
        if not 0 < cell_timeout_s <= MAX_CELL_TIMEOUT_S or max_steps < 1:
            raise ValueError(f"cell_timeout_s must be in (0, {MAX_CELL_TIMEOUT_S:g}] and max_steps >= 1, "
                             f"got {cell_timeout_s} and {max_steps}")
        self._cell_timeout_s, self._max_steps = cell_timeout_s, max_steps
        self._kernel: SandboxedKernel | None = None
        self._question: ReplQuestion | None = None
        self._state = JupyterState()

    async def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
                    task_id: str | None = None, question: str | None = None, answer: int | float | str | None = None,
                    cell_timeout_s: CellTimeout | None = None) -> JupyterObservation:
        """Start a kernel on a question (custom ``question`` + ``answer``, bundled ``task_id``, or drawn by ``seed``).

        Raises:
            ValueError: a bad question or task id.
            SandboxUnavailable: sandboxes cannot run here (the message names the fix).
            KernelDied: the kernel did not start.
        """
        chosen = choose_question(task_id=task_id, seed=seed, question=question, answer=answer)
        await self.close()
        self._kernel = await self._start()
        self._question = chosen
        self._state = JupyterState(episode_id=episode_id or uuid.uuid4().hex, task_id=chosen.id,
                                   cell_timeout_s=cell_timeout_s or self._cell_timeout_s)
        return JupyterObservation(task_id=chosen.id, question=chosen.question + _HOW, reward=0.0)

    @staticmethod
    async def _start() -> SandboxedKernel:
        config = SandboxConfig(limits=kernel_limits(), hidden_paths=answer_keys())
        reason = await asyncio.to_thread(sandbox_available, config)
        if reason is not None:
            raise SandboxUnavailable(f"{reason}. The jupyter env runs its kernel only inside the OS sandbox "
                                     "(bubblewrap), never unsandboxed")
        return await SandboxedKernel.start(config)

    def task_splits(self) -> list[TaskSplit]:
        """The repl env's bundled questions: every fourth one is ``test``, the rest ``train``."""
        ids = [q.id for q in bundled_questions()]
        return [listed_split("train", "train", [t for i, t in enumerate(ids) if i % 4 != 3], "task_id"),
                listed_split("test", "test", ids[3::4], "task_id")]

    async def step(self, action: JupyterAction) -> JupyterObservation:
        """Run ``action.code`` as a cell; then, when ``action.answer`` is set, grade it and end the episode."""
        state, question = self._state, self._question
        if self._kernel is None or question is None:
            return JupyterObservation(error="no kernel is running; call reset() first", done=state.answered)
        state.step_count += 1
        fields: dict[str, object] = {}
        if action.code or action.answer is None:
            fields = await self._run_cell(self._kernel, action.code)
        if action.answer is not None:
            correct = answers_match(action.answer, question.answer)
            state.answered, state.reward = True, float(correct)
            await self.close()
            return JupyterObservation(task_id=state.task_id, **fields, correct=correct,  # type: ignore[arg-type]
                                      reward=state.reward, done=True)
        done = state.step_count >= self._max_steps
        if done:
            await self.close()
        return JupyterObservation(task_id=state.task_id, **fields, reward=0.0, done=done)  # type: ignore[arg-type]

    async def _run_cell(self, kernel: SandboxedKernel, code: str) -> dict[str, object]:
        self._state.cells += 1
        try:
            run: CellRun = await kernel.execute(code, self._state.cell_timeout_s)
        except KernelDied as exc:
            await kernel.close()
            self._kernel = await self._start()
            self._state.restarts += 1
            return {"kernel_restarted": True, "error": f"{exc}; a fresh kernel replaced it (its variables are gone)"}
        return {"stdout": run.stdout, "stderr": run.stderr, "result": run.result, "displays": run.displays,
                "error_name": run.error_name, "error_value": run.error_value, "traceback": run.traceback,
                "execution_count": run.execution_count, "timed_out": run.timed_out}

    @property
    def state(self) -> JupyterState:
        return self._state

    async def close(self) -> None:
        """Kill the kernel with its sandbox."""
        kernel, self._kernel = self._kernel, None
        if kernel is not None:
            await kernel.close()
