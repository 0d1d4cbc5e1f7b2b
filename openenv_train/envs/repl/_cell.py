"""The repl env's cell runner, run in the sandbox as ``python -I -c SOURCE`` with a JSON payload on stdin.

Stdlib only (uses cloudpickle when the interpreter has it). Each cell is a new process, so the session's
variables live in a pickle in the scratch dir: the runner loads them, runs the cell in that namespace
(printing the value of a final expression, like a REPL), then saves them again, atomically, even when
the cell raised. Values that cannot be pickled (generators, open files, ...) are dropped and named in
the report. Functions and classes defined in cells survive with cloudpickle, their globals rebound to
the session's namespace so that they see later changes. ``FINAL(value)`` records the answer and ends the cell.

Payload: ``{"nonce", "code", "state_file", "output_cap"}``. The cell's output goes to stdout and stderr,
each capped at ``output_cap`` bytes by the runner so that its report always fits after it: one line on
stdout, a newline, the nonce, then ``{"final", "has_final", "variables", "dropped", "notes"}`` as JSON.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import io
import json
import linecache
import os
import pickle
import sys
import traceback
import types
from typing import Any

try:
    import cloudpickle
except ImportError:  # without it, functions and classes defined in cells are dropped between cells
    cloudpickle = None

__all__ = ["main"]

CELL = "<cell>"
MAX_STATE_BYTES = 24 << 20
"""Largest pickle of the variables kept (the scratch tmpfs holds 64 MiB, and the old file stays until replaced)."""
REPORT_RESERVE = 12 << 10
"""Bytes of the output cap kept free for the report."""
_MAX_ANSWER_CHARS = 4000
_MAX_NOTE_CHARS = 500


class _Final(BaseException):
    """Raised by FINAL() to end the cell; a BaseException so that ``except Exception`` in a cell lets it pass."""


class _Capped(io.TextIOBase):
    """A text stream straight onto a file descriptor that keeps the first ``budget`` bytes and drops the rest."""

    def __init__(self, fd: int, budget: int) -> None:
        self.fd, self.budget, self.truncated = fd, budget, False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "replace")
        room = min(len(data), self.budget)
        self.truncated = self.truncated or room < len(data)
        view = memoryview(data)[:room]
        while view:
            view = view[os.write(self.fd, view):]
        self.budget -= room
        return len(text)


def _pickler_class() -> Any:
    if cloudpickle is not None:
        return cloudpickle.Pickler

    class _StdPickler(pickle.Pickler):
        """Modules by name; functions and classes of the cells refused (stdlib pickle could not load them)."""

        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, types.ModuleType):
                return importlib.import_module, (obj.__name__,)
            if isinstance(obj, types.FunctionType | type) and obj.__module__ == "__main__":
                raise pickle.PicklingError("functions and classes defined in cells need cloudpickle")
            return NotImplemented

    return _StdPickler


def _dumps(value: Any, namespace: dict[str, Any]) -> bytes:
    """Pickle ``value``; the session namespace itself is a persistent reference (the loader supplies it)."""
    buffer = io.BytesIO()
    pickler = _pickler_class()(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    if hasattr(pickler, "globals_ref"):  # cloudpickle: functions of the cells keep the namespace as globals
        pickler.globals_ref[id(namespace)] = namespace
    pickler.persistent_id = lambda obj: "namespace" if obj is namespace else None
    pickler.dump(value)
    return buffer.getvalue()


class _Unpickler(pickle.Unpickler):
    """Resolves the persistent reference to the session namespace (see :func:`_dumps`)."""

    def __init__(self, file: Any, namespace: dict[str, Any]) -> None:
        super().__init__(file)
        self.namespace = namespace

    def persistent_load(self, pid: Any) -> Any:
        if pid != "namespace":
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return self.namespace


def _load(path: str, namespace: dict[str, Any], notes: list[str]) -> None:
    try:
        with open(path, "rb") as f:
            namespace.update(_Unpickler(f, namespace).load())
    except FileNotFoundError:
        pass
    except Exception as exc:
        notes.append(f"the variables of earlier cells could not be loaded ({type(exc).__name__}: {exc}"[:300]
                     + "); this cell starts from an empty namespace")


def _user_names(namespace: dict[str, Any]) -> list[str]:
    return sorted(name for name in namespace if not name.startswith("__") and name != "FINAL")


def _save(path: str, namespace: dict[str, Any], notes: list[str]) -> list[str]:
    """Write the picklable variables; returns the names dropped."""
    values = {name: namespace[name] for name in _user_names(namespace)}
    dropped: list[str] = []
    try:
        data = _dumps(values, namespace)
    except Exception:  # find the culprits one by one, keep the rest together (shared references survive)
        for name in list(values):
            try:
                _dumps({name: values[name]}, namespace)
            except Exception:
                dropped.append(name)
                del values[name]
        data = _dumps(values, namespace)
    if len(data) > MAX_STATE_BYTES:
        notes.append(f"the variables take {len(data)} bytes pickled, more than {MAX_STATE_BYTES}; they were not "
                     "saved, so the next cell sees them as they were before this one")
        return dropped
    tmp = f"{path}.tmp"
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        notes.append(f"the variables could not be saved ({exc}); the next cell sees them as they were before this one")
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return dropped


def _print_error(exc: BaseException) -> None:
    """The traceback from the cell's own frames on (none of the runner's)."""
    if isinstance(exc, SyntaxError):
        sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
        return
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != CELL:
        tb = tb.tb_next
    sys.stderr.write("".join(traceback.format_exception(type(exc), exc, tb)))


def _run(code: str, namespace: dict[str, Any]) -> None:
    """Run the cell; a last bare expression is evaluated and its repr printed (unless None)."""
    linecache.cache[CELL] = (len(code), None, code.splitlines(True), CELL)
    tree = ast.parse(code, CELL, "exec")
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        tree.body.pop()
    exec(compile(tree, CELL, "exec"), namespace)
    if isinstance(last, ast.Expr):
        value = eval(compile(ast.Expression(last.value), CELL, "eval"), namespace)
        if value is not None:
            print(repr(value))


def _jsonable(value: Any) -> Any:
    """The answer as JSON: as is, or a numpy-style scalar's ``item()``, else its ``str``; at most 4000 chars."""
    candidates = [value]
    if callable(getattr(value, "item", None)):
        try:
            candidates.append(value.item())
        except Exception:  # item() of an array with more than one element, say
            pass
    for candidate in candidates:
        try:
            if len(json.dumps(candidate)) <= _MAX_ANSWER_CHARS:
                return candidate
        except (TypeError, ValueError):
            continue
    text = str(value)
    return text if len(text) <= _MAX_ANSWER_CHARS else text[:_MAX_ANSWER_CHARS] + "..."


def _report_line(nonce: str, report: dict[str, Any]) -> bytes:
    """The report line, shortened (name lists first) until it fits in the reserve."""
    while True:
        line = ("\n" + nonce + json.dumps(report) + "\n").encode()
        if len(line) <= REPORT_RESERVE - 64 or not (report["variables"] or report["dropped"] or report["notes"]):
            return line
        for key in ("variables", "dropped", "notes"):
            items = report[key]
            if items:
                keep = len(items) // 2
                report[key] = dict(list(items.items())[:keep]) if isinstance(items, dict) else items[:keep]
                report["more"] = True
                break


def main() -> None:
    """Entry point: load the variables, run the cell, save them, report."""
    payload = json.loads(sys.stdin.buffer.read())
    sys.stdin = io.StringIO()
    budget = max(int(payload["output_cap"]) - REPORT_RESERVE, 0)
    out, err = _Capped(1, budget), _Capped(2, budget)
    sys.stdout, sys.stderr = out, err
    sys.path.insert(0, "")  # like a REPL: modules written to the scratch dir are importable
    module = types.ModuleType("__main__")
    sys.modules["__main__"] = module
    namespace = module.__dict__
    namespace["__builtins__"] = builtins
    notes: list[str] = []
    _load(payload["state_file"], namespace, notes)
    final: dict[str, Any] = {}

    def FINAL(answer: Any) -> None:  # noqa: N802 -- the convention's name
        """Give the final answer and end the episode."""
        final["value"] = _jsonable(answer)
        raise _Final

    namespace["FINAL"] = FINAL
    try:
        _run(payload["code"], namespace)
    except _Final:
        pass
    except BaseException as exc:  # the cell's own error, SystemExit and KeyboardInterrupt included
        _print_error(exc)
    namespace.pop("FINAL", None)
    dropped = _save(payload["state_file"], namespace, notes)
    names = [name for name in _user_names(namespace) if name not in dropped]
    report = {
        "final": final.get("value"),
        "has_final": "value" in final,
        "variables": {name[:80]: type(namespace[name]).__name__[:80] for name in names},
        "dropped": [name[:80] for name in dropped],
        "notes": [note[:_MAX_NOTE_CHARS] for note in notes],
        "more": False,
        "stdout_truncated": out.truncated,
        "stderr_truncated": err.truncated,
    }
    view = memoryview(_report_line(payload["nonce"], report))
    while view:
        view = view[os.write(1, view):]


if __name__ == "__main__":
    main()
