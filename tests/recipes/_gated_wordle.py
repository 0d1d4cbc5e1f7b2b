"""A Wordle env whose training games wait at a gate (tests/recipes/test_grpo_wordle.py kills the recipe there).

``WORDLE_GATE`` names a folder holding ``held.json`` (the held-out secrets: evaluation games, never gated) and
``limit``: the first ``limit`` resets with any other secret (GRPO's games) go through; the next ones write
``waiting`` and wait until the test creates ``open``. Resets without a secret (the pool's session checks) pass.
The recipe is then stopped at a known place, whatever the machine's speed.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import time
from pathlib import Path
from typing import Any

from openenv_train.envs.wordle import WordleEnvironment


def _count(gate: Path, secret: str) -> int:
    """Record one training reset; how many there have been (under a lock: sessions may reset at once)."""
    with open(gate / "resets", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(f"{secret}\n")
        f.flush()
        f.seek(0)
        return len(f.read().split())


class GatedWordle(WordleEnvironment):
    """:class:`WordleEnvironment` whose training resets past the gate's limit wait for the gate to open."""

    @functools.wraps(WordleEnvironment.reset)  # the same reset options (the server reads the signature)
    def reset(self, **options: Any) -> Any:
        gate = Path(os.environ["WORDLE_GATE"])
        secret = options.get("task") or options.get("secret") or options.get("word")
        if secret is not None and secret not in json.loads((gate / "held.json").read_text()):
            if _count(gate, str(secret)) > int((gate / "limit").read_text()):
                (gate / "waiting").touch()
                while not (gate / "open").exists():
                    time.sleep(0.05)
        return super().reset(**options)
