"""The coding env's grading worker: ``python -I -u -c SOURCE CMD_FD REPLY_FD``, started by the grader.

Stdlib only. It reads JSON lines on CMD_FD: first ``{"code", "function"}`` (it runs the submission and
looks the function up), then one ``{"args", "kwargs"}`` per test; for each it writes one JSON line on
REPLY_FD: ``{"ok": true}`` / ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``.
It never sees an expected value. What the submission prints goes to its stdout and stderr.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import traceback
from typing import Any, BinaryIO

__all__ = ["main"]


def _error(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text if len(text) <= 500 else text[:497] + "..."


def _send(reply: BinaryIO, message: dict[str, Any]) -> None:
    reply.write(json.dumps(message).encode() + b"\n")
    reply.flush()


def _result_line(result: Any) -> dict[str, Any]:
    try:
        json.dumps(result)
    except (TypeError, ValueError) as exc:
        return {"ok": False, "error": f"the function returned a {type(result).__name__}, which is not JSON: {exc}"}
    return {"ok": True, "result": result}


def main() -> None:
    """Entry point: run the submission, then answer one call per test line."""
    commands = os.fdopen(int(sys.argv[1]), "rb")
    reply = os.fdopen(int(sys.argv[2]), "wb")
    sys.argv = ["solution"]
    setup = json.loads(commands.readline())
    namespace: dict[str, Any] = {"__name__": "solution", "__builtins__": builtins}
    try:
        exec(compile(setup["code"], "<submission>", "exec"), namespace)
        function = namespace.get(setup["function"])
        if not callable(function):
            raise NameError(f"the submission defines no function named {setup['function']!r}")
    except BaseException as exc:  # the submission's own failure, SystemExit included, is reported, not raised
        _send(reply, {"ok": False, "error": _error(exc)})
        return
    _send(reply, {"ok": True})
    for line in commands:
        call = json.loads(line)
        try:
            result = function(*call["args"], **call["kwargs"])
        except BaseException as exc:
            _send(reply, {"ok": False, "error": _error(exc)})
            continue
        _send(reply, _result_line(result))


if __name__ == "__main__":
    main()
