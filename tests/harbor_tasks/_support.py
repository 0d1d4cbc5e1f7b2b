"""Helpers of the Harbor task-runner tests: the shipped examples, and small task folders built in tmp dirs."""

from __future__ import annotations

from pathlib import Path

import openenv_train.harbor

EXAMPLES = Path(openenv_train.harbor.__file__).parent / "examples"
EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "task.toml").is_file())

TOML = """version = "1.0"

[verifier]
timeout_sec = {verifier_timeout}

[agent]
timeout_sec = {agent_timeout}
"""

PASS_IF_DONE = """#!/bin/bash
mkdir -p /logs/verifier
if [ -f /app/done.txt ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def write_task(root: Path, name: str, *, toml: str | None = None, agent_timeout: float = 30,
               verifier_timeout: float = 30, instruction: str = "Create /app/done.txt.\n",
               dockerfile: str = "FROM python:3.12-slim\nWORKDIR /app\n", env_files: dict[str, str] | None = None,
               test_sh: str = PASS_IF_DONE, test_files: dict[str, str] | None = None,
               solve_sh: str | None = "#!/bin/bash\ntouch /app/done.txt\n") -> Path:
    """A task folder ``root/name``; every part can be replaced, and ``solve_sh=None`` leaves no solution."""
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    text = toml if toml is not None else TOML.format(agent_timeout=agent_timeout, verifier_timeout=verifier_timeout)
    (task / "task.toml").write_text(text)
    (task / "instruction.md").write_text(instruction)
    (task / "environment" / "Dockerfile").write_text(dockerfile)
    for rel, content in (env_files or {}).items():
        (task / "environment" / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / "environment" / rel).write_text(content)
    (task / "tests" / "test.sh").write_text(test_sh)
    for rel, content in (test_files or {}).items():
        (task / "tests" / rel).write_text(content)
    if solve_sh is not None:
        (task / "solution").mkdir()
        (task / "solution" / "solve.sh").write_text(solve_sh)
    return task
