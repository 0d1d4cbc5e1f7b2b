"""``state.json`` of a recipe run: which phases finished and what they measured, for ``--resume``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["RunState"]


class RunState:
    """``state.json``: which phases are done and the per-task results of finished evaluations."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"done": [], "evals": {}}

    def done(self, phase: str) -> bool:
        return phase in self.data["done"]

    def finish(self, phase: str, **values: Any) -> None:
        self.data["done"].append(phase)
        self.data.update(values)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)  # never a torn state file, whenever the run is killed
