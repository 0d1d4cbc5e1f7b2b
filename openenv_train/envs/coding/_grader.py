"""Grading a submission: the hidden tests run in a fresh sandbox of their own, never in the episode's."""

from __future__ import annotations

import functools
import json
import secrets
from dataclasses import dataclass
from importlib import resources

from pydantic import BaseModel, Field

from ..run_limits import MAX_WALL_TIME_S, RunLimits, open_sandbox
from ._tasks import CodingTask

__all__ = ["CaseResult", "Grade", "grade"]

GRADE_MARGIN_S = 5.0
"""Sandbox wall time beyond the grader's own budget: start-up, worker start, the report."""


class CaseResult(BaseModel):
    """The outcome of one hidden test."""

    passed: bool = Field(description="Whether the call returned the expected value.")
    error: str | None = Field(default=None, description="Why it failed: the exception, a wrong value, a time-out.")


@dataclass(frozen=True)
class Grade:
    """The outcome of a submission."""

    results: list[CaseResult]
    output: str
    """What the submission printed while graded (stdout and stderr merged)."""
    note: str
    """Problems with the grading itself or with defining the submission; empty when none."""
    timed_out: bool
    output_truncated: bool

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def reward(self) -> float:
        """The fraction of hidden tests passed."""
        return self.passed / len(self.results)


@functools.cache
def _source(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


async def grade(code: str, task: CodingTask, limits: RunLimits) -> Grade:
    """Run ``task``'s hidden tests against the submitted ``code`` in a new sandbox, closed afterwards.

    Each test may take ``limits.wall_time_s``; all of them together at most three times that (at most
    60 s). Expected values go to the grader on stdin and never reach the process that runs ``code``.

    Raises:
        SandboxUnavailable: sandboxes cannot run here.
        SandboxError: the sandbox itself failed.
    """
    budget_s = min(3 * limits.wall_time_s, MAX_WALL_TIME_S)
    nonce = f"@@grade-{secrets.token_hex(16)}@@"
    payload = {
        "nonce": nonce,
        "worker": _source("_grade_worker.py"),
        "code": code,
        "function": task.function,
        "tests": [test.model_dump(mode="json") for test in task.tests],
        "test_time_s": limits.wall_time_s,
        "budget_s": budget_s,
        "output_cap": limits.max_output_bytes,
    }
    # The report carries the output JSON-escaped (up to 6 bytes per byte) plus one line per test.
    config = limits.sandbox_config(wall_time_s=budget_s + GRADE_MARGIN_S,
                                   max_output_bytes=8 * limits.max_output_bytes + 2**20)
    sandbox = await open_sandbox(config, "coding")
    try:
        run = await sandbox.arun([sandbox.config.python, "-I", "-c", _source("_grade_harness.py")],
                                 stdin=json.dumps(payload))
    finally:
        sandbox.close()
    _, found, report_text = run.stdout.rpartition(nonce)
    if not found:
        why = "it ran out of time" if run.timed_out else f"it ended with exit code {run.exit_code}"
        note = f"grading failed before reporting ({why}): {run.stderr[-1000:]}".rstrip(": ")
        failed = [CaseResult(passed=False, error="not graded: " + why) for _ in task.tests]
        return Grade(failed, output="", note=note, timed_out=run.timed_out, output_truncated=run.truncated)
    report = json.loads(report_text)
    results = [CaseResult.model_validate(item) for item in report["results"]]
    return Grade(results, output=report["output"], note=report["setup_error"] or "",
                 timed_out=any("timed out" in (r.error or "") for r in results),
                 output_truncated=bool(report["output_truncated"]))
