"""TerminalEnvironment: a tmux terminal in the OS sandbox; keystrokes in, the screen out, a script checks the task."""

from __future__ import annotations

import asyncio
import uuid
from importlib import resources
from typing import Annotated, Any

from pydantic import Field

from ...sandbox import SandboxConfig, SandboxLimits, SandboxUnavailable, sandbox_available
from ...server import Environment, TaskSplit, listed_split
from ..run_limits import answer_keys
from ._models import TerminalAction, TerminalObservation, TerminalState
from ._session import TerminalDied, TerminalSession
from ._tasks import TerminalTask, bundled_terminal_tasks, pick_terminal_task

__all__ = ["TerminalEnvironment", "terminal_limits"]

MiB = 2**20
CHECK_TIMEOUT_S = 30.0
_REPLY_MARGIN_S = 15.0
"""How much longer than the action's own wait the driver may take to answer before the terminal counts as hung."""

Width = Annotated[int, Field(ge=20, le=400, description="Terminal columns.")]
Height = Annotated[int, Field(ge=5, le=200, description="Terminal rows.")]

_HOW = ("\n\nYou are at a bash prompt in your home directory. Send {\"keystrokes\": \"ls -l\\n\"} to type (\\n presses "
        "Enter) and get the screen back; {\"keys\": [\"C-c\"]} presses special keys. Send {\"submit\": true} when done: "
        "a script checks your work and ends the episode (reward 1.0 if it passes).")


def terminal_limits() -> SandboxLimits:
    """Limits of a terminal's sandbox: 1 GiB address space and 60 CPU seconds per process, 64 processes, 64 MiB of
    files. Wall time does not apply (the terminal lives as long as the episode; each step's wait is bounded)."""
    return SandboxLimits(wall_time_s=60.0, cpu_time_s=60, memory_bytes=1024 * MiB, max_processes=64,
                         max_open_files=256, max_output_bytes=64 * 1024, scratch_bytes=64 * MiB)


class TerminalEnvironment(Environment[TerminalAction, TerminalObservation, TerminalState]):
    """A terminal-bench style task in a real tmux terminal inside an OS sandbox.

    ``reset`` starts a bubblewrap sandbox running tmux with a bash shell, runs the task's setup script and shows
    the screen. Each step types keystrokes and returns the screen once the shell is idle and the screen settled
    (or the action's ``wait_s`` ran out: ``busy`` says a command still runs). A submit, or the last allowed step,
    runs the task's check script in the sandbox: reward 1.0 if it exits 0, else 0.0. Closing the session kills
    the sandbox and everything in it.

    Args:
        width: terminal columns.
        height: terminal rows.
        max_steps: steps before the episode ends with the check.
    """

    name = "terminal"
    opens_sandboxes = True
    action_type = TerminalAction
    observation_type = TerminalObservation
    state_type = TerminalState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")

    def __init__(self, *, width: int = 80, height: int = 24, max_steps: int = 50) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self._size = (width, height)
        self._max_steps = max_steps
        self._session: TerminalSession | None = None
        self._task: TerminalTask | None = None
        self._state = TerminalState()

    async def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
                    task_id: str | None = None, task: TerminalTask | None = None,
                    width: Width | None = None, height: Height | None = None) -> TerminalObservation:
        """Start a terminal on a task (custom ``task``, bundled ``task_id``, or drawn by ``seed``).

        Raises:
            ValueError: a bad task or task id, or a setup script that fails (its output is in the message).
            SandboxUnavailable: sandboxes cannot run here (the message names the fix).
            TerminalDied: the terminal did not start.
        """
        chosen = pick_terminal_task(task_id, seed, task)
        size = (width or self._size[0], height or self._size[1])
        config = SandboxConfig(limits=terminal_limits(), hidden_paths=answer_keys())
        reason = await asyncio.to_thread(sandbox_available, config)
        if reason is not None:
            raise SandboxUnavailable(f"{reason}. The terminal env runs its shell only inside the OS sandbox "
                                     "(bubblewrap), never unsandboxed")
        await self.close()
        session, first = await TerminalSession.start(config, width=size[0], height=size[1])
        if chosen.setup:
            done = await session.request({"op": "setup", "script": chosen.setup, "timeout_s": CHECK_TIMEOUT_S},
                                         CHECK_TIMEOUT_S + _REPLY_MARGIN_S)
            if done.get("exit_code") != 0:
                await session.close()
                raise ValueError(f"the setup script of terminal task {chosen.id!r} failed: {done.get('output', '')}")
        self._session, self._task = session, chosen
        self._state = TerminalState(episode_id=episode_id or uuid.uuid4().hex, task_id=chosen.id, width=size[0],
                                    height=size[1], max_steps=self._max_steps)
        return self._observation(first, prompt=chosen.prompt + _HOW, reward=0.0)

    def task_splits(self) -> list[TaskSplit]:
        """The bundled tasks: the last one is ``test``, the rest ``train``."""
        ids = list(bundled_terminal_tasks())
        return [listed_split("train", "train", ids[:-1], "task_id"), listed_split("test", "test", ids[-1:], "task_id")]

    async def step(self, action: TerminalAction) -> TerminalObservation:
        """Type ``action``'s keystrokes and keys; return the settled screen (after the check, on a submit)."""
        session, task = self._session, self._task
        if session is None or task is None:
            return TerminalObservation(error="no terminal is running; call reset() first", done=self._state.submitted)
        self._state.step_count += 1
        try:
            screen = await session.request({"op": "send", "text": action.keystrokes, "keys": action.keys,
                                            "wait_s": action.wait_s}, action.wait_s + _REPLY_MARGIN_S)
            if not (action.submit or self._state.step_count >= self._max_steps):
                return self._observation(screen, reward=0.0)
            checked = await session.request({"op": "check", "script": task.check, "timeout_s": CHECK_TIMEOUT_S},
                                            CHECK_TIMEOUT_S + _REPLY_MARGIN_S)
        except TerminalDied as exc:
            self._session = None
            return TerminalObservation(task_id=task.id, error=str(exc), reward=0.0, done=True)
        passed = checked.get("exit_code") == 0
        self._state.submitted, self._state.reward = True, float(passed)
        await self.close()
        return self._observation(screen, passed=passed, check_output=str(checked.get("output", "")),
                                 reward=float(passed), done=True)

    def _observation(self, reply: dict[str, Any], **fields: Any) -> TerminalObservation:
        return TerminalObservation(screen=str(reply.get("screen", "")), cursor=list(reply.get("cursor", [0, 0])),
                                   busy=bool(reply.get("busy", False)), task_id=self._state.task_id,
                                   error=reply.get("error"), **fields)

    @property
    def state(self) -> TerminalState:
        return self._state

    async def close(self) -> None:
        """Kill the terminal's sandbox and everything in it."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()
