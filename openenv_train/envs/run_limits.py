"""What the sandboxed envs (coding, repl, git) share: run limits with safe maxima, opening a Sandbox, run fields."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any

from pydantic import Field

from ..core import Observation
from ..sandbox import Sandbox, SandboxConfig, SandboxLimits, SandboxResult, SandboxUnavailable

__all__ = [
    "DEFAULT_OUTPUT_BYTES",
    "DEFAULT_WALL_TIME_S",
    "MAX_OUTPUT_BYTES",
    "MAX_WALL_TIME_S",
    "MIN_OUTPUT_BYTES",
    "OutputBytes",
    "RunLimits",
    "RunObservation",
    "WallTime",
    "open_sandbox",
    "run_fields",
]

KiB = 1024
MiB = 1024 * KiB

DEFAULT_WALL_TIME_S = 10.0
MAX_WALL_TIME_S = 60.0
DEFAULT_OUTPUT_BYTES = 64 * KiB
MIN_OUTPUT_BYTES = 16 * KiB
MAX_OUTPUT_BYTES = 1 * MiB
MEMORY_BYTES = 1024 * MiB
SCRATCH_BYTES = 64 * MiB

WallTime = Annotated[float, Field(gt=0, le=MAX_WALL_TIME_S, description="Wall-clock seconds one run may take.")]
OutputBytes = Annotated[int, Field(ge=MIN_OUTPUT_BYTES, le=MAX_OUTPUT_BYTES,
                                   description="Bytes of stdout and of stderr kept per run.")]


@dataclass(frozen=True)
class RunLimits:
    """Limits of one code run, checked against the safe maxima.

    Example:
        >>> RunLimits().with_options(wall_time_s=2.0).wall_time_s
        2.0
    """

    wall_time_s: float = DEFAULT_WALL_TIME_S
    """Wall-clock seconds a run may take before everything in it is killed; at most 60."""
    max_output_bytes: int = DEFAULT_OUTPUT_BYTES
    """Bytes kept of stdout and of stderr each (16 KiB to 1 MiB)."""

    def __post_init__(self) -> None:
        if not 0 < self.wall_time_s <= MAX_WALL_TIME_S:
            raise ValueError(f"wall_time_s must be in (0, {MAX_WALL_TIME_S:g}], got {self.wall_time_s}; "
                             "code that needs longer does not suit an RL step")
        if not MIN_OUTPUT_BYTES <= self.max_output_bytes <= MAX_OUTPUT_BYTES:
            raise ValueError(f"max_output_bytes must be in [{MIN_OUTPUT_BYTES}, {MAX_OUTPUT_BYTES}], "
                             f"got {self.max_output_bytes}")

    def with_options(self, *, wall_time_s: float | None = None, max_output_bytes: int | None = None) -> RunLimits:
        """A copy with the given (non-None) limits changed, checked again."""
        return RunLimits(
            wall_time_s=self.wall_time_s if wall_time_s is None else float(wall_time_s),
            max_output_bytes=self.max_output_bytes if max_output_bytes is None else int(max_output_bytes),
        )

    def sandbox_config(self, *, wall_time_s: float | None = None, max_output_bytes: int | None = None) -> SandboxConfig:
        """The sandbox config of these limits (CPU time follows wall time, so busy loops end either way).

        ``wall_time_s`` and ``max_output_bytes`` override the limits for internal runs (the grader's).
        """
        wall = self.wall_time_s if wall_time_s is None else wall_time_s
        limits = SandboxLimits(
            wall_time_s=wall, cpu_time_s=max(1, math.ceil(wall)), memory_bytes=MEMORY_BYTES, max_processes=64,
            max_open_files=256, max_output_bytes=max_output_bytes or self.max_output_bytes, scratch_bytes=SCRATCH_BYTES,
        )
        return SandboxConfig(limits=limits, hidden_paths=answer_keys())


async def open_sandbox(config: SandboxConfig, env_name: str) -> Sandbox:
    """A new Sandbox, built off the event loop (its first availability probe starts a process).

    Raises:
        SandboxUnavailable: sandboxes cannot run here; the message names the fix and says that the env
            never falls back to running code unsandboxed.
    """
    try:
        return await asyncio.to_thread(Sandbox, config)
    except SandboxUnavailable as exc:
        raise SandboxUnavailable(
            f"{exc.reason}. The {env_name} env runs code only inside the OS sandbox (bubblewrap), never "
            "unsandboxed; fix the sandbox as said, or serve this env on a host where it works "
            "(check with: python -c 'from openenv_train.sandbox import sandbox_available; print(sandbox_available())')"
        ) from None


class RunObservation(Observation):
    """What one sandboxed run printed and how it ended; ``error`` explains a rejected action."""

    stdout: str = Field(default="", description="Standard output of the run (capped).")
    stderr: str = Field(default="", description="Standard error of the run (capped).")
    exit_code: int | None = Field(default=None, description="Exit status; -N for signal N; null when nothing ran.")
    timed_out: bool = Field(default=False, description="The wall-time or CPU-time limit ended the run.")
    killed_reason: str | None = Field(
        default=None, description="The limit that ended the run: wall_time, cpu_time, memory, output_limit.")
    truncated: bool = Field(default=False, description="stdout or stderr went past the output cap and lost its tail.")
    error: str | None = Field(default=None, description="Why the action was rejected (nothing ran), else null.")


def run_fields(result: SandboxResult) -> dict[str, Any]:
    """The :class:`RunObservation` fields of a sandbox result."""
    return {
        "stdout": result.stdout,
        "stderr": result.stderr,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "killed_reason": result.killed_reason,
        "truncated": result.truncated,
    }


def answer_keys() -> tuple[str, ...]:
    """Files of the package that hold hidden tests and answers: sandboxed code must not read them."""
    keys = (("openenv_train.envs.coding", "tasks.json"), ("openenv_train.envs.repl", "questions.json"),
            ("openenv_train.envs.git_repo", "tasks.json"), ("openenv_train.envs.terminal", "tasks.json"))
    return tuple(str(resources.files(package).joinpath(name)) for package, name in keys)
