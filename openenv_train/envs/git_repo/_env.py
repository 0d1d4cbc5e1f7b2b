"""GitEnvironment: carry out a task on a real git repository in the OS sandbox; a submit checks its state."""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from importlib import resources

from ...sandbox import Sandbox, SandboxConfig, SandboxResult
from ...server import Environment, TaskSplit, listed_split
from ..run_limits import DEFAULT_OUTPUT_BYTES, DEFAULT_WALL_TIME_S, OutputBytes, RunLimits, WallTime, open_sandbox, run_fields
from ._models import CheckResult, GitAction, GitObservation, GitState
from ._tasks import GitTask, bundled_git_tasks, choose_git_task

__all__ = ["GIT_ENV", "GitEnvironment"]

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Agent", "GIT_AUTHOR_EMAIL": "agent@example.com",
    "GIT_COMMITTER_NAME": "Agent", "GIT_COMMITTER_EMAIL": "agent@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_PAGER": "cat", "PAGER": "cat", "GIT_EDITOR": "true", "GIT_TERMINAL_PROMPT": "0",
}
"""Variables of every run: a fixed identity and clock (same actions, same commit ids), no pager, and an editor
that accepts git's default message (``git merge --continue`` never waits on a terminal)."""

_REPO = "repo"
_MARK = "GIT-ENV-CHECK "

_HOW = ("\n\nThe repository is your working directory. Send {\"command\": \"git status\"} to run a shell command in it "
        "(git, sed, printf, ... ; changes persist for the episode); send {\"submit\": true} (with or without a "
        "command) to have the repository's state checked, which ends the episode with the fraction of checks that "
        "hold as reward.")


class GitEnvironment(Environment[GitAction, GitObservation, GitState]):
    """A task on a real git repository (edit, commit, branch, merge with conflicts, revert, tag) in an OS sandbox.

    ``reset`` builds the task's repository with its setup script in a fresh bubblewrap sandbox; each step runs a
    shell command in it; a submit runs the task's checks on the repository and pays the fraction that hold.
    Author, committer and clock are fixed, so the same actions give the same commit ids.

    Args:
        wall_time_s: default wall-clock limit of each command in seconds (at most 60).
        max_output_bytes: default bytes kept of stdout and of stderr (16 KiB to 1 MiB).
    """

    name = "git"
    opens_sandboxes = True
    action_type = GitAction
    observation_type = GitObservation
    state_type = GitState
    readme = resources.files(__package__).joinpath("README.md").read_text(encoding="utf-8")

    def __init__(self, *, wall_time_s: float = DEFAULT_WALL_TIME_S, max_output_bytes: int = DEFAULT_OUTPUT_BYTES) -> None:
        self._defaults = RunLimits(wall_time_s=wall_time_s, max_output_bytes=max_output_bytes)
        self._limits = self._defaults
        self._sandbox: Sandbox | None = None
        self._task: GitTask | None = None
        self._state = GitState()

    async def reset(self, *, seed: int | None = None, episode_id: str | None = None,  # type: ignore[override]
                    task_id: str | None = None, task: GitTask | None = None,
                    wall_time_s: WallTime | None = None, max_output_bytes: OutputBytes | None = None) -> GitObservation:
        """Build a task's repository (custom ``task``, bundled ``task_id``, or drawn by ``seed``) in a new sandbox.

        Raises:
            ValueError: a bad task, task id or limit, or a setup script that fails (its output is in the message).
            OSError: git is not installed.
            SandboxUnavailable: sandboxes cannot run here (the message names the fix).
        """
        if shutil.which("git", path="/usr/bin:/bin") is None:
            raise OSError("the git env needs git in /usr/bin: install it (Debian: apt-get install -y git)")
        chosen = choose_git_task(task_id=task_id, seed=seed, task=task)
        limits = self._defaults.with_options(wall_time_s=wall_time_s, max_output_bytes=max_output_bytes)
        sandbox = await open_sandbox(self._config(limits), self.name or "git")
        setup = await sandbox.arun(f"git init -q -b main {_REPO} && cd {_REPO} && {{\n{chosen.setup or ':'}\n}}",
                                   timeout_s=limits.wall_time_s)
        if setup.exit_code != 0:
            sandbox.close()
            raise ValueError(f"the setup script of git task {chosen.id!r} failed (exit code {setup.exit_code}): "
                             f"{(setup.stderr or setup.stdout)[-2000:]}")
        self.close()
        self._sandbox, self._task, self._limits = sandbox, chosen, limits
        self._state = GitState(episode_id=episode_id or uuid.uuid4().hex, task_id=chosen.id,
                               wall_time_s=limits.wall_time_s)
        return GitObservation(task_id=chosen.id, prompt=chosen.prompt + _HOW, reward=0.0)

    def task_splits(self) -> list[TaskSplit]:
        """The bundled tasks: every third one (in file order) is ``test``, the rest ``train``."""
        ids = [task.id for task in bundled_git_tasks()]
        return [listed_split("train", "train", [t for i, t in enumerate(ids) if i % 3 != 2], "task_id"),
                listed_split("test", "test", ids[2::3], "task_id")]

    async def step(self, action: GitAction) -> GitObservation:
        """Run ``action.command`` in the repository; then, when ``action.submit``, check it and end the episode."""
        if self._sandbox is None or self._task is None:
            return self._observation(error="no episode is running; call reset() first")
        if self._state.submitted:
            return self._observation(error="the episode already ended with a submit; call reset() to start another",
                                     done=True)
        fields: dict[str, object] = {}
        if action.command or not action.submit:
            result = await self._sandbox.arun(f"cd {_REPO} || exit 1\n{action.command}", timeout_s=self._limits.wall_time_s)
            fields = run_fields(result)
            self._state.commands += 1
        self._state.step_count += 1
        if not action.submit:
            return self._observation(**fields, reward=0.0)
        results = await self._check(self._sandbox, self._task)
        passed = sum(r.passed for r in results)
        self._state.submitted, self._state.reward = True, passed / len(results)
        return self._observation(**fields, checks_passed=passed, checks_total=len(results), check_results=results,
                                 reward=self._state.reward, done=True)

    async def _check(self, sandbox: Sandbox, task: GitTask) -> list[CheckResult]:
        """Run every check in its own subshell, in one sandbox run; a check that did not report failed."""
        lines = [f"cd {_REPO} || exit 1"] + [
            f"if ( {check.command}\n) >/dev/null 2>&1 </dev/null; then echo '{_MARK}{i} 1'; else echo '{_MARK}{i} 0'; fi"
            for i, check in enumerate(task.checks)]
        result: SandboxResult = await sandbox.arun("\n".join(lines), timeout_s=self._limits.wall_time_s)
        held = {line.removeprefix(_MARK) for line in result.stdout.splitlines() if line.startswith(_MARK)}
        return [CheckResult(name=check.name, passed=f"{i} 1" in held) for i, check in enumerate(task.checks)]

    @staticmethod
    def _config(limits: RunLimits) -> SandboxConfig:
        config = limits.sandbox_config()
        return dataclasses.replace(config, env={**config.env, **GIT_ENV})

    def _observation(self, **fields: object) -> GitObservation:
        return GitObservation(task_id=self._state.task_id, **fields)  # type: ignore[arg-type]

    @property
    def state(self) -> GitState:
        return self._state

    def close(self) -> None:
        """Delete the episode's sandbox and its repository."""
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            sandbox.close()
