"""The coding env's grader, run in a fresh sandbox as ``python -I -c SOURCE`` with a JSON payload on stdin.

Stdlib only. It reads the whole payload (submission, hidden tests, a nonce) from stdin before anything
else runs, so the tests never touch the disk or any command line, and makes itself non-dumpable so no
other process of the sandbox can read its memory. The submission runs in a worker process
(``_grade_worker.py``) that only ever receives one test's inputs at a time; expected values stay here.
A test that hangs or kills its worker fails alone: the next test gets a new worker. Finally it prints
one line on stdout: the nonce, then the JSON report ``{"results", "setup_error", "output",
"output_truncated"}`` (``output``: what the submission printed, stdout and stderr merged).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import select
import signal
import subprocess
import sys
import time
from typing import Any

__all__ = ["equal", "main"]

_PR_SET_DUMPABLE = 4
_MAX_REPLY_BYTES = 4 << 20


def equal(expected: Any, got: Any) -> bool:
    """JSON equality: bools only equal bools, numbers compare by value (floats within 1e-9).

    Example:
        >>> equal([1, 2.0, "a"], [1.0, 2, "a"]), equal(1, True), equal(0.1 + 0.2, 0.3)
        (True, False, True)
    """
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(expected) is type(got) and expected == got
    if isinstance(expected, int | float) and isinstance(got, int | float):
        if isinstance(expected, int) and isinstance(got, int):
            return expected == got
        return math.isclose(expected, got, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(equal(e, g) for e, g in zip(expected, got, strict=True))
    if isinstance(expected, dict) and isinstance(got, dict):
        return expected.keys() == got.keys() and all(equal(expected[k], got[k]) for k in expected)
    return type(expected) is type(got) and expected == got


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Output:
    """The workers' merged stdout and stderr: one pipe, drained whenever the grader waits, kept up to a cap."""

    def __init__(self, cap: int) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.read_fd, 1 << 16):
                room = self.cap - len(self.data)
                self.data += chunk[:max(room, 0)]
                self.truncated = self.truncated or len(chunk) > room


class _Worker:
    """One worker process: JSON lines to it on one pipe, replies on another."""

    def __init__(self, source: str, output: _Output) -> None:
        cmd_r, self.cmd_w = os.pipe()
        self.reply_r, reply_w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-u", "-c", source, str(cmd_r), str(reply_w)],
            stdin=subprocess.DEVNULL, stdout=output.write_fd, stderr=output.write_fd,
            pass_fds=(cmd_r, reply_w), start_new_session=True,
        )
        os.close(cmd_r)
        os.close(reply_w)
        os.set_blocking(self.cmd_w, False)
        self.output = output
        self.buffer = bytearray()

    def send(self, message: dict[str, Any], deadline: float) -> str | None:
        """Write one JSON line; None when sent, else why not."""
        data = memoryview(json.dumps(message).encode() + b"\n")
        while data:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timed out while sending the test's inputs"
            readable, writable, _ = select.select([self.output.read_fd], [self.cmd_w], [], left)
            if readable:
                self.output.drain()
            if writable:
                try:
                    data = data[os.write(self.cmd_w, data):]
                except BrokenPipeError:
                    return self._gone()
        return None

    def receive(self, deadline: float, limit_s: float) -> dict[str, Any] | str:
        """The next reply, or why there is none (time limit, worker gone, reply too large)."""
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return f"timed out after {limit_s:g}s"
            readable, _, _ = select.select([self.reply_r, self.output.read_fd], [], [], left)
            if self.output.read_fd in readable:
                self.output.drain()
            if self.reply_r in readable:
                chunk = os.read(self.reply_r, 1 << 16)
                if not chunk:
                    return self._gone()
                self.buffer += chunk
                if len(self.buffer) > _MAX_REPLY_BYTES:
                    return f"the result is larger than {_MAX_REPLY_BYTES} bytes of JSON"
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer = bytearray(rest)
        try:
            reply = json.loads(line)
        except ValueError:
            return "the worker wrote a reply that is not JSON"
        return reply if isinstance(reply, dict) else "the worker wrote a reply that is not a JSON object"

    def _gone(self) -> str:
        try:
            code = self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "the process stopped answering"
        return f"the process exited (exit code {code})"

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2.0)
        for fd in (self.cmd_w, self.reply_r):
            with contextlib.suppress(OSError):
                os.close(fd)


def _grade(payload: dict[str, Any], output: _Output) -> tuple[list[dict[str, Any]], str | None]:
    tests: list[dict[str, Any]] = payload["tests"]
    test_s, budget_end = float(payload["test_time_s"]), time.monotonic() + float(payload["budget_s"])
    results: list[dict[str, Any]] = []
    worker: _Worker | None = None
    try:
        for index, test in enumerate(tests):
            if time.monotonic() >= budget_end:
                results.append({"passed": False, "error": "the grading time budget was used up"})
                continue
            if worker is None:
                worker = _Worker(payload["worker"], output)
                setup = {"code": payload["code"], "function": payload["function"]}
                deadline = min(time.monotonic() + test_s, budget_end)
                reply = worker.send(setup, deadline) or worker.receive(deadline, test_s)
                if not isinstance(reply, dict) or not reply.get("ok"):
                    error = reply if isinstance(reply, str) else str(reply.get("error"))
                    results += [{"passed": False, "error": error} for _ in tests[index:]]
                    return results, f"running the submission failed: {error}"
            deadline = min(time.monotonic() + test_s, budget_end)
            call = {"args": test["args"], "kwargs": test["kwargs"]}
            reply = worker.send(call, deadline) or worker.receive(deadline, test_s)
            if isinstance(reply, str):
                results.append({"passed": False, "error": reply})
                worker.kill()
                worker = None
            elif not reply.get("ok"):
                results.append({"passed": False, "error": str(reply.get("error"))})
            elif equal(test["expected"], reply.get("result")):
                results.append({"passed": True, "error": None})
            else:
                error = f"expected {_short(test['expected'])}, got {_short(reply.get('result'))}"
                results.append({"passed": False, "error": error})
        return results, None
    finally:
        if worker is not None:
            worker.kill()


def main() -> None:
    """Entry point: read the payload, grade, print the nonce and the report."""
    ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    payload = json.loads(sys.stdin.buffer.read())
    output = _Output(int(payload["output_cap"]))
    results, setup_error = _grade(payload, output)
    output.drain()
    report = {
        "results": results,
        "setup_error": setup_error,
        "output": output.data.decode(errors="replace"),
        "output_truncated": output.truncated,
    }
    sys.stdout.write(payload["nonce"] + json.dumps(report, ensure_ascii=False) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
