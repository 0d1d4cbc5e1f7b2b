"""The tutorial (docs/tutorial.md) as a new user follows it: every block in order in one bash session, in an empty
folder: the env file written, the server started and validated, two GRPO steps with TRL, the viewer queried.

Only ``<!-- skip-all: ... -->`` blocks (the install) are left out. The ports 8000 and 8080 are replaced by free
ones. The run is bounded by its work (two GRPO steps, 8-episode evaluations), the timeout is only a backstop.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.conftest import ROOT, blocks

TUTORIAL = ROOT / "docs" / "tutorial.md"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tutorial_script(ports: dict[str, str]) -> str:
    """The tutorial's blocks as one bash script: bash as is, Python files written, Python blocks run."""
    parts = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
    for n, block in enumerate(blocks(TUTORIAL)):
        if block.skip_all:
            continue
        code = block.code
        for old, new in ports.items():
            code = code.replace(old, new)
        parts.append(f"echo '### {TUTORIAL.name}:{block.line}'")
        if block.lang == "bash":
            parts.append(code)
        elif block.lang == "python" and block.title:
            parts.append(f"cat > {shlex.quote(block.title)} <<'DOCS_EOF_{n}'\n{code}DOCS_EOF_{n}")
        elif block.lang == "python":
            parts.append(f"python - <<'DOCS_EOF_{n}'\n{code}DOCS_EOF_{n}")
    return "\n".join(parts) + "\n"


def test_the_tutorial_has_the_steps_a_new_user_needs() -> None:
    script = tutorial_script({})
    for step in ("cat > guess_env.py", "openenv-train serve guess_env:GuessEnv", "openenv-train validate --url",
                 "python -m openenv_train.recipes.grpo", "grpo.steps=2", "openenv-train view runs/guess"):
        assert step in script, step


@pytest.mark.timeout(900)
def test_the_tutorial_runs_from_an_empty_folder(tmp_path: Path) -> None:
    server, viewer = _free_port(), _free_port()
    script = tutorial_script({"8000": str(server), "8080": str(viewer)})
    (tmp_path / "tutorial.sh").write_text(script)
    bin_dir = str(Path(sys.executable).parent)  # `python` and `openenv-train` of this venv
    env = {**os.environ, "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
           "PYTHONPATH": os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p)}
    proc = subprocess.run(["bash", str(tmp_path / "tutorial.sh")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=850)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"the tutorial failed:\n{out[-6000:]}"
    assert "passed: " in out and "FAIL" not in out.split("python -m openenv_train.recipes.grpo")[0]
    summary = json.loads((tmp_path / "runs" / "guess" / "summary.json").read_text())
    assert summary["budgets"]["grpo"]["steps"] == 2
    line = next(line for line in proc.stdout.splitlines() if line.startswith('{"total"'))
    episodes, _ = json.JSONDecoder().raw_decode(line)  # curl prints no newline after the body
    assert episodes["total"] > 0 and len(episodes["episodes"]) == 2
    assert (tmp_path / "runs" / "guess" / "training.png").exists()
