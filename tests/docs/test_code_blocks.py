"""Every Python code block of README.md and docs/ runs (each in a fresh interpreter), so the docs cannot drift
from the code; blocks marked ``<!-- skip: reason -->`` are reported as skipped with that reason.

A block may use top-level ``await`` (it then runs in ``asyncio.run``). It runs in an empty working directory
holding the ``title="name.py"`` blocks before it on the same page.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.conftest import ROOT, Block, all_blocks, blocks

RUNNER = """
import ast, asyncio, sys
source = open(sys.argv[1], encoding="utf-8").read()
code = compile(source, sys.argv[2], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
result = eval(code, {"__name__": "__main__"})
if asyncio.iscoroutine(result):
    asyncio.run(result)
"""
PYTHON = [b for b in all_blocks() if b.lang == "python"]


def test_the_docs_have_python_blocks_and_every_skip_says_why() -> None:
    assert len(PYTHON) >= 10
    for block in all_blocks():
        assert block.skip is None or len(block.skip) > 10, f"{block.id}: say why the block is skipped"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("block", PYTHON, ids=[b.id for b in PYTHON])
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    if block.skip:
        pytest.skip(block.skip)
    for earlier in blocks(block.path):  # the page's files so far
        if earlier.line >= block.line:
            break
        if earlier.lang == "python" and earlier.title:
            (tmp_path / earlier.title).write_text(earlier.code, encoding="utf-8")
    script = tmp_path / "_block.py"
    script.write_text(block.code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(script), block.id], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, f"{block.id} failed:\n{block.code}\n--- output ---\n{proc.stdout}{proc.stderr}"
