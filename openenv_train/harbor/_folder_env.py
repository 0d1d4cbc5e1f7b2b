"""A folder of Harbor tasks served as an env: each episode one task in the OS sandbox, shell commands as actions,
the task's own ``tests/test.sh`` as the reward.

It is how a Harbor task folder joins what takes an env (a pool, a mix of the GRPO recipe): ``reset(tasks_dir=...,
seed=...)`` picks a task of the folder (``task=NAME``, else the seed's, ``seed % len(tasks)`` in name order) and
builds its workspace as ``harbor run --env sandbox`` does (:class:`~openenv_train.harbor.SandboxTaskEnv`: the
Dockerfile's steps, Harbor's ``/logs`` and ``/tests`` folders mapped into it); each step runs one shell command
there; a submit, or the last of ``max_steps``, runs the verifier and pays its reward. Harbor's agent time limit is
not applied (the pool's ``episode_timeout_s`` bounds an episode); each command has ``command_timeout_s``. A task
that declares MCP servers is refused (nothing here starts them): leave it out of the folder.

The folder is a reset option, not a server setting, so the server has no Task API (501): a run draws the tasks
by seed, and its held-out seeds play the same tasks as its training seeds (a Harbor dataset holds tasks, not
splits). The env sandboxes its own work, so its server runs outside the sandbox (``serve`` plainly): a sandbox
cannot nest in another.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from ..core import Action, Observation, State
from ..server import Environment
from ..trace import EnvStep
from ._runner import _Attempt, _verify
from ._task_env import SandboxTaskEnv
from ._task_errors import UnsupportedTaskFeature
from ._tasks import HarborTask, find_tasks, load_task

__all__ = ["HarborAction", "HarborFolderEnvironment", "HarborObservation", "HarborState"]

_OUTPUT_CHARS = 4000
_HOW = ("\n\nYou are in the task's workspace ({workdir}). Send {{\"command\": \"ls -la\"}} to run a bash command there "
        "and see its output; send {{\"submit\": true}} when done: the task's tests run and end the episode with their "
        "reward.")

Steps = Annotated[int, Field(ge=1, le=1000, description="Commands before the tests run and the episode ends.")]
Seconds = Annotated[float, Field(gt=0, le=600, description="Wall-clock limit of each command.")]


class HarborAction(Action):
    """One bash command in the task's workspace, and/or a submit that runs the task's tests."""

    command: str = Field(default="", max_length=20_000, description="bash command run in the workspace.")
    submit: bool = Field(default=False, description="Run the task's tests after the command and end the episode.")


class HarborObservation(Observation):
    """What a model reads (``text``: the instruction on reset, a command's output after) and the outcome."""

    task: str = Field(default="", description="Name of the task (its folder).")
    text: str = Field(default="", description="The instruction (reset) or the command's output, capped.")
    exit_code: int | None = Field(default=None, description="The command's exit status; null when none ran.")
    timed_out: bool = Field(default=False, description="The command ran past command_timeout_s.")
    verifier_output: str | None = Field(default=None, description="What tests/test.sh printed (at the end).")
    error: str | None = Field(default=None, description="Why an action was refused, else null.")


class HarborState(State):
    """The episode's task, folder and whether the tests ran."""

    task: str = ""
    tasks_dir: str = ""
    submitted: bool = False
    reward: float | None = None


class HarborFolderEnvironment(Environment[HarborAction, HarborObservation, HarborState]):
    """A folder of Harbor tasks (or one task folder) as an env; see the module docstring.

    Args:
        max_steps: default commands per episode before the tests run.
        command_timeout_s: default wall-clock limit of each command.
    """

    name = "harbor_folder"
    action_type = HarborAction
    observation_type = HarborObservation
    state_type = HarborState

    def __init__(self, *, max_steps: int = 20, command_timeout_s: float = 30.0) -> None:
        self._max_steps, self._timeout = max_steps, command_timeout_s
        self._env: SandboxTaskEnv | None = None
        self._task: HarborTask | None = None
        self._state = HarborState()
        self._limit = max_steps

    async def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
                    tasks_dir: str, task: str | None = None, max_steps: Steps | None = None,
                    command_timeout_s: Seconds | None = None) -> HarborObservation:
        """Build the workspace of a task of ``tasks_dir`` (``task`` by name, else drawn by ``seed``).

        Raises:
            FileNotFoundError: ``tasks_dir`` holds no task folders.
            ValueError: no task named ``task`` there.
            TaskError: the task is malformed, declares MCP servers (not started here), or its workspace cannot be
                built (e.g. no sandbox here).
        """
        paths = find_tasks([tasks_dir])
        if task is not None:
            named = [p for p in paths if p.name == task]
            if not named:
                raise ValueError(f"no task {task!r} in {tasks_dir}; its tasks: {', '.join(p.name for p in paths)}")
            path = named[0]
        else:
            path = paths[(seed if seed is not None else random.randrange(2**31)) % len(paths)]
        chosen = load_task(path)
        if chosen.config.environment.mcp_servers:
            raise UnsupportedTaskFeature(f"task {chosen.name} declares MCP servers, which this env does not start (its "
                                         "actions are shell commands); run it with 'openenv-train harbor run' instead")
        env = SandboxTaskEnv(chosen)
        try:
            await env.start()
        except BaseException:
            await env.close()
            raise
        await self._close_env()
        self._env, self._task = env, chosen
        self._limit = max_steps or self._max_steps
        self._timeout = command_timeout_s or self._timeout
        self._state = HarborState(episode_id=episode_id or uuid.uuid4().hex, task=chosen.name,
                                  tasks_dir=str(Path(tasks_dir).resolve()))
        return HarborObservation(task=chosen.name, text=chosen.instruction.strip() + _HOW.format(workdir=env.workdir),
                                 reward=0.0)

    async def step(self, action: HarborAction) -> HarborObservation:
        """Run ``action.command``; then, on a submit or the last allowed step, the task's tests (the reward)."""
        if self._env is None or self._task is None:
            return HarborObservation(error="no episode is running; call reset() first")
        if self._state.submitted:
            return HarborObservation(task=self._task.name, error="the episode ended; call reset() to start another",
                                     done=True)
        fields: dict[str, Any] = {}
        if action.command or not action.submit:
            result = await self._env.exec(action.command, timeout_s=self._timeout)
            output = (result.stdout + result.stderr)[-_OUTPUT_CHARS:]
            fields = {"text": output or f"(no output; exit code {result.exit_code})", "exit_code": result.exit_code,
                      "timed_out": result.timed_out}
        self._state.step_count += 1
        if not action.submit and self._state.step_count < self._limit:
            return HarborObservation(task=self._task.name, reward=0.0, **fields)
        attempt, steps = _Attempt(), list[EnvStep]()
        await _verify(self._task, self._env, self._task.config.verifier.timeout_sec, steps, _OUTPUT_CHARS, attempt)
        self._state.submitted, self._state.reward = True, attempt.reward
        verifier = steps[-1].observation if steps else {}
        return HarborObservation(task=self._task.name, reward=attempt.reward, done=True,
                                 verifier_output=str(verifier.get("stdout", "")) + str(verifier.get("stderr", "")),
                                 **fields)

    @property
    def state(self) -> HarborState:
        return self._state

    async def _close_env(self) -> None:
        env, self._env = self._env, None
        if env is not None:
            await env.close()

    async def close(self) -> None:
        """Tear the task's workspace down."""
        await self._close_env()
