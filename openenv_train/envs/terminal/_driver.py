"""Runs inside the OS sandbox: a tmux server with one shell, driven by JSON lines on stdin (one reply per line).

Standard library only, started as a script (``python -I _driver.py W H``): requests are ``{"op": "setup"|"send"|
"check", ...}``; replies ``{"screen", "cursor", "busy"}`` or ``{"exit_code", "output"}`` or ``{"error"}``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

SOCKET = "/tmp/.terminal-env.sock"
SHELL = ["/bin/bash", "--norc", "--noprofile"]
POLL_S = 0.05


def tmux(*args: str) -> str:
    done = subprocess.run(["/usr/bin/tmux", "-S", SOCKET, *args], capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise RuntimeError(f"tmux {args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def screen() -> dict[str, object]:
    text = tmux("capture-pane", "-p", "-t", "main").rstrip("\n")
    x, y, command = tmux("display-message", "-p", "-t", "main", "#{cursor_x} #{cursor_y} #{pane_current_command}").split()
    return {"screen": text, "cursor": [int(x), int(y)], "busy": command != "bash"}


def settle(wait_s: float, *, drawn: bool = False) -> dict[str, object]:
    """The screen once the shell is idle and the screen unchanged for two polls (and, with ``drawn``, not blank:
    the shell's first prompt), or when ``wait_s`` runs out."""
    deadline = time.monotonic() + wait_s
    last, same = screen(), 0
    while time.monotonic() < deadline:
        time.sleep(POLL_S)
        now = screen()
        same = same + 1 if now == last else 0
        last = now
        if same >= 2 and not now["busy"] and (not drawn or str(now["screen"]).strip()):
            break
    return last


def run(script: str, timeout_s: float) -> dict[str, object]:
    try:
        done = subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"exit_code": None, "output": f"timed out after {timeout_s:g} s"}
    return {"exit_code": done.returncode, "output": (done.stdout + done.stderr)[-8000:]}


def handle(request: dict[str, object]) -> dict[str, object]:
    op = request.get("op")
    if op == "send":
        text, keys = str(request.get("text", "")), [str(k) for k in request.get("keys", [])]  # type: ignore[attr-defined]
        for i, line in enumerate(text.split("\n")):
            if i:
                tmux("send-keys", "-t", "main", "Enter")
            if line:
                tmux("send-keys", "-t", "main", "-l", line)
        for key in keys:
            tmux("send-keys", "-t", "main", key)
        return settle(float(request.get("wait_s", 1.0)))  # type: ignore[arg-type]
    if op in ("setup", "check"):
        return run(str(request.get("script", "")), float(request.get("timeout_s", 10.0)))  # type: ignore[arg-type]
    return {"error": f"unknown op {op!r}"}


def main() -> None:
    width, height = sys.argv[1], sys.argv[2]
    env = {**os.environ, "PS1": "$ ", "TERM": "xterm-256color"}
    subprocess.run(["/usr/bin/tmux", "-S", SOCKET, "-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", width,
                    "-y", height, *SHELL], check=True, env=env, timeout=10)
    tmux("set-option", "-g", "status", "off")
    print(json.dumps(settle(10.0, drawn=True)), flush=True)
    for line in sys.stdin:
        try:
            reply = handle(json.loads(line))
        except Exception as exc:  # the host shows the error; the session goes on
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
