"""SandboxResult: what one sandboxed run printed, how it ended and which limit (if any) ended it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["KilledReason", "SandboxResult"]

KilledReason = Literal["wall_time", "cpu_time", "memory", "output_limit"]


@dataclass(frozen=True)
class SandboxResult:
    """The outcome of :meth:`Sandbox.run`."""

    stdout: str
    """Standard output (UTF-8, undecodable bytes replaced), at most ``max_output_bytes`` of it."""
    stderr: str
    """Standard error, capped the same way."""
    exit_code: int
    """The command's exit status, or ``-N`` when signal N killed it."""
    timed_out: bool
    """Whether the wall-time or the CPU-time limit ended the run."""
    killed_reason: KilledReason | None
    """The limit that ended the run, or None when it ended by itself (``'memory'`` is inferred from the
    allocation failure the program reported, since RLIMIT_AS makes allocations fail rather than kill)."""
    duration_s: float
    """Wall-clock seconds from start to end, sandbox setup included."""
    truncated: bool
    """Whether stdout or stderr went past ``max_output_bytes`` and lost its tail."""
    cpu_time_s: float = 0.0
    """CPU seconds (user + system) of the command and the children it waited for."""
    isolated: bool = True
    """False only for runs made without namespaces because ``allow_unsafe`` was set."""

    @property
    def ok(self) -> bool:
        """Exit status 0 and no limit hit."""
        return self.exit_code == 0 and self.killed_reason is None
