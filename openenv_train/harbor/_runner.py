"""Run Harbor tasks: build the environment, let an agent work, run tests/test.sh, read the reward, and turn the
attempt into one :class:`TraceRow` (failures included, as ``ok=False`` rows).

The reward comes from Harbor's files: ``/logs/verifier/reward.json`` (a flat object of named numbers; all of
them land in ``rewards``) is read first, else ``/logs/verifier/reward.txt`` (one number). ``reward`` is the
JSON's ``"reward"`` key, else reward.txt, else the mean of the JSON's numbers.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shlex
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..containers import docker_available
from ..trace import CaptureStore, EnvInfo, EnvStep, ErrorInfo, PolicyInfo, TraceRow, TraceWriter, TrainingTrace
from ._agents import AgentContext, HarborAgent
from ._task_env import DockerTaskEnv, SandboxTaskEnv, TaskEnvironment, resolve_env
from ._task_errors import (
    AgentExitError,
    AgentTimeoutError,
    EnvironmentSetupError,
    ModelCallError,
    RewardFileError,
    TaskError,
    VerifierTimeoutError,
)
from ._tasks import HarborTask, find_tasks, load_task

__all__ = ["HarborRunConfig", "parse_rewards", "run_task", "run_tasks"]

Backend = Literal["sandbox", "docker", "auto"]


@dataclass(frozen=True)
class HarborRunConfig:
    """How tasks are run (the same for every task of a run)."""

    backend: Backend = "sandbox"
    """``sandbox`` (OS sandbox, offline), ``docker`` (needs an engine), or ``auto`` (docker when one answers)."""
    run_id: str = ""
    """Identity of the run in the rows; with ``episode_id`` it lets a resumed run skip finished attempts."""
    attempts: int = 1
    """Attempts per task (Harbor's ``n_attempts``); the attempts of one task share a ``group_id``."""
    concurrency: int = 1
    """Attempts run at the same time."""
    default_agent_timeout_s: float = 600.0
    """Agent time limit of tasks whose task.toml sets no ``[agent] timeout_sec``."""
    agent_timeout_s: float | None = None
    """Overrides every task's agent time limit."""
    timeout_multiplier: float = 1.0
    """Scales the agent and verifier limits (slow machines)."""
    step_output_limit: int = 16384
    """Characters of a command's stdout/stderr kept in each step of the row."""
    docker_base_image: str | None = None
    """Docker backend: build every task's image FROM this (local) image instead of its Dockerfile's FROM, for
    engines that cannot pull (offline); tasks that name a prebuilt ``docker_image`` are not rebuilt."""

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.concurrency < 1:
            raise ValueError(f"attempts and concurrency must be >= 1, got {self.attempts} and {self.concurrency}")
        if not self.timeout_multiplier > 0 or not self.default_agent_timeout_s > 0:
            raise ValueError("timeout_multiplier and default_agent_timeout_s must be > 0")
        if self.agent_timeout_s is not None and not self.agent_timeout_s > 0:
            raise ValueError(f"agent_timeout_s must be > 0 (or None), got {self.agent_timeout_s}")


def parse_rewards(files: Mapping[str, bytes | None]) -> tuple[float, dict[str, float | None]]:
    """``(reward, rewards)`` from the contents of ``/logs/verifier/reward.json`` and ``reward.txt``.

    Raises:
        RewardFileError: neither file exists, or the one read is empty, malformed or not finite.

    Example:
        >>> parse_rewards({"/logs/verifier/reward.json": b'{"reward": 0.5, "style": 1, "note": "x"}'})
        (0.5, {'reward': 0.5, 'style': 1.0})
        >>> parse_rewards({"/logs/verifier/reward.txt": b"1\\n"})
        (1.0, {})
    """
    text, data = files.get("/logs/verifier/reward.txt"), files.get("/logs/verifier/reward.json")
    txt_reward = _txt_reward(text) if text is not None else None
    if data is not None:
        try:
            parsed = json.loads(data)
        except ValueError:
            raise RewardFileError(f"/logs/verifier/reward.json is not valid JSON: {data[:200]!r}") from None
        if not isinstance(parsed, dict):
            raise RewardFileError(f"/logs/verifier/reward.json must be a JSON object of named numbers, got {parsed!r:.200}")
        rewards = {str(k): float(v) for k, v in parsed.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        bad = [k for k, v in rewards.items() if not math.isfinite(v)]
        if bad:
            raise RewardFileError(f"/logs/verifier/reward.json: {', '.join(bad)} must be finite numbers")
        if "reward" in rewards:
            return rewards["reward"], dict(rewards)
        if txt_reward is not None:
            return txt_reward, dict(rewards)
        if not rewards:
            raise RewardFileError("/logs/verifier/reward.json holds no numbers; write e.g. {\"reward\": 1.0}")
        return sum(rewards.values()) / len(rewards), dict(rewards)
    if txt_reward is not None:
        return txt_reward, {}
    raise RewardFileError("tests/test.sh wrote no reward: expected /logs/verifier/reward.txt (a number) or "
                          "/logs/verifier/reward.json (an object of named numbers)")


def _txt_reward(text: bytes) -> float:
    if not text.strip():
        raise RewardFileError("/logs/verifier/reward.txt is empty; write one number, e.g. 1 or 0.5")
    try:
        value = float(text.decode(errors="replace").strip())
    except ValueError:
        raise RewardFileError(f"/logs/verifier/reward.txt is not a number: {text[:100]!r}") from None
    if not math.isfinite(value):
        raise RewardFileError(f"/logs/verifier/reward.txt must be a finite number, got {value}")
    return value


def _make_env(task: HarborTask, backend: Backend, docker_base_image: str | None = None,
              program_paths: Sequence[str] = ()) -> TaskEnvironment:
    if backend == "auto":
        backend = "docker" if docker_available() is None else "sandbox"
    if backend == "docker":
        reason = docker_available()
        if reason is not None:
            raise EnvironmentSetupError(f"the docker backend is not usable here: {reason}; use --env sandbox")
        return DockerTaskEnv(task, base_image=docker_base_image, program_paths=program_paths)
    return SandboxTaskEnv(task)


@dataclass
class _Attempt:
    """The mutable outcome of one attempt while it runs."""

    error: ErrorInfo | None = None
    reward: float | None = None
    rewards: dict[str, float | None] | None = None
    done: bool = False
    truncated: bool = False

    def fail(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = ErrorInfo(type=type(exc).__name__, message=str(exc) or repr(exc))


async def _verify(task: HarborTask, env: TaskEnvironment, timeout_s: float, steps: list[EnvStep], limit: int,
                  attempt: _Attempt) -> None:
    await env.reset_dir("/logs/verifier")
    await env.upload_dir(task.tests_dir, "/tests")
    variables = resolve_env(task.config.verifier.env, where="[verifier] env")
    started = time.monotonic()
    result = await env.exec(f"bash {shlex.quote(env.path('/tests/test.sh'))}", timeout_s=timeout_s, env=variables)
    step = EnvStep(action={"phase": "verifier", "command": "bash /tests/test.sh"},
                   observation={"exit_code": result.exit_code, "stdout": result.stdout[-limit:],
                                "stderr": result.stderr[-limit:], "timed_out": result.timed_out},
                   seconds=time.monotonic() - started, done=True)
    steps.append(step)
    if result.timed_out:
        raise VerifierTimeoutError(f"tests/test.sh exceeded the task's verifier timeout ([verifier] timeout_sec = "
                                   f"{timeout_s:g}s) on task {task.name}")
    files = await env.read_files(["/logs/verifier/reward.json", "/logs/verifier/reward.txt"])
    try:
        attempt.reward, attempt.rewards = parse_rewards(files)
    except RewardFileError as exc:
        tail = (result.stdout + result.stderr)[-800:]
        raise RewardFileError(f"task {task.name}: {exc} (test.sh exit code {result.exit_code}; output: {tail})") from None
    step.reward, attempt.done = attempt.reward, True


async def run_task(task_dir: str | os.PathLike[str], agent: HarborAgent, *, config: HarborRunConfig | None = None,
                   attempt: int = 0, capture: CaptureStore | None = None) -> TraceRow:
    """Run one attempt of one task and return its row; task failures become ``ok=False`` rows, never raise.

    Args:
        task_dir: the task folder.
        agent: who works on it (see :mod:`._agents`).
        attempt: index of this attempt (part of ``episode_id``).
        capture: the store that records the agent's model calls (the policy server's); a session is opened
            per attempt and its id handed to the agent. None: a private store (for agents that record
            their calls themselves).
    """
    config = config or HarborRunConfig()
    capture = CaptureStore() if capture is None else capture
    path = Path(task_dir).resolve()
    started = time.monotonic()
    timings: dict[str, float] = {}
    steps: list[EnvStep] = []
    outcome = _Attempt()
    session_id = f"harbor-{uuid.uuid4().hex}"
    capture.open_session(session_id, metadata={"task": path.name, "attempt": attempt})
    task: HarborTask | None = None
    env: TaskEnvironment | None = None
    ctx: AgentContext | None = None
    try:
        task = load_task(path)
        # an agent that runs a program of the host's (an agent CLI) names the paths a container must mount
        env = _make_env(task, config.backend, config.docker_base_image, getattr(agent, "host_paths", ()))
        phase = time.monotonic()
        await env.start()
        timings["env_setup"] = time.monotonic() - phase
        agent_timeout = (config.agent_timeout_s or task.config.agent.timeout_sec or config.default_agent_timeout_s)
        ctx = AgentContext(task=task, env=env, timeout_s=agent_timeout * config.timeout_multiplier, capture=capture,
                           session_id=session_id, step_output_limit=config.step_output_limit, steps=steps)
        phase = time.monotonic()
        try:
            # bash() stops at the deadline by itself; this backstop catches an agent stuck elsewhere
            await asyncio.wait_for(agent.run(ctx), ctx.timeout_s * 1.05 + 1.0)
        except TimeoutError:
            outcome.fail(ctx.timeout_error())
        except TaskError as exc:
            outcome.fail(exc)
        outcome.truncated = ctx.truncated or (outcome.error is not None and outcome.error.type == "AgentTimeoutError")
        timings["agent"] = time.monotonic() - phase
        timings["model"] = ctx.model_seconds
        if outcome.error is None or outcome.error.type in _VERIFY_AFTER:
            phase = time.monotonic()
            try:
                await _verify(task, env, task.config.verifier.timeout_sec * config.timeout_multiplier, steps,
                              config.step_output_limit, outcome)
            finally:
                timings["verifier"] = time.monotonic() - phase
    except Exception as exc:  # failures are data: every attempt yields a row
        outcome.fail(exc)
    finally:
        if env is not None:
            try:
                await env.close()
            except Exception as exc:
                outcome.fail(exc)
        trace = capture.close_session(session_id) if session_id in capture else TrainingTrace()
    timings["total"] = time.monotonic() - started
    model = (ctx.model_id if ctx is not None else None) or getattr(agent, "model", None)
    return _row(path, task, agent, model, env, config, attempt, outcome, steps, trace, timings)


#: Agent errors after which the tests still run (Harbor verifies a timed-out agent's work too).
_VERIFY_AFTER = {AgentTimeoutError.__name__, ModelCallError.__name__, AgentExitError.__name__}


def _row(path: Path, task: HarborTask | None, agent: HarborAgent, model: str | None, env: TaskEnvironment | None,
         config: HarborRunConfig, attempt: int, outcome: _Attempt, steps: list[EnvStep], trace: TrainingTrace,
         timings: dict[str, float]) -> TraceRow:
    name = task.name if task is not None else path.name
    spec: dict[str, Any] = task.spec() if task is not None else {"name": name, "path": str(path)}
    spec["agent"] = agent.name
    if task is not None and task.warnings:
        spec["warnings"] = list(task.warnings)
    exact = bool(trace.turns) and all(t.completion_token_ids and t.per_token_logps for t in trace.turns)
    return TraceRow(
        run_id=config.run_id, episode_id=f"{path.name}#{attempt}", group_id=path.name,
        env=EnvInfo(name=f"harbor/{name}", version=spec.get("checksum"),
                    url=getattr(env, "backend", None) or config.backend),
        task=spec, policy=PolicyInfo(model=model),
        reward=outcome.reward, rewards=outcome.rewards or {}, done=outcome.done, truncated=outcome.truncated,
        ok=outcome.error is None, error=outcome.error, steps=steps, trace=trace,
        rollout_type="train" if exact else "eval", timings=timings)


async def run_tasks(paths: Iterable[str | os.PathLike[str]], agent: HarborAgent, *,
                    config: HarborRunConfig | None = None, writer: TraceWriter | None = None,
                    capture: CaptureStore | None = None,
                    on_row: Callable[[TraceRow], None] | None = None,
                    on_skip: Callable[[Path, int], None] | None = None) -> list[TraceRow]:
    """Run every task found under ``paths`` (task folders, or folders of them), ``config.attempts`` times each.

    Rows go to ``writer`` as they finish and to ``on_row``; the rows of this call are returned in task order.
    Attempts the writer already holds (by ``(run_id, episode_id)``) are skipped and passed to ``on_skip``:
    a run resumes where it stopped.

    Raises:
        FileNotFoundError: a path does not exist or holds no task folders.
    """
    config = config or HarborRunConfig()
    jobs = [(path, k) for path in find_tasks(paths) for k in range(config.attempts)]
    if writer is not None:
        done = [(p, k) for p, k in jobs if writer.written((config.run_id, f"{p.name}#{k}"))]
        jobs = [job for job in jobs if job not in done]
        for p, k in done:
            if on_skip is not None:
                on_skip(p, k)
    gate = asyncio.Semaphore(config.concurrency)

    async def one(path: Path, k: int) -> TraceRow:
        async with gate:
            row = await run_task(path, agent, config=config, attempt=k, capture=capture)
        if writer is not None:
            writer.write(row)
        if on_row is not None:
            on_row(row)
        return row

    return list(await asyncio.gather(*(one(p, k) for p, k in jobs)))
