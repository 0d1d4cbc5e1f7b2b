"""Env folders for ``validate --level``: the ``init`` scaffold with a ``validation:`` block (OpenEnv's manifest)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

#: A block OpenEnv's schema accepts and its bounds allow (the scaffold pays 0.1 per character, so "hi" earns 0.2).
BLOCK: dict[str, Any] = {
    "reward": {"range": [0.0, 1.0], "oracle_tolerance": 0.05, "floor_margin": 0.2},
    "resources": {"cpu": 1, "memory_mb": 512, "disk_mb": 256, "episode_timeout_s": 60},
    "capabilities": {"verifier": {"kind": "reward_channel"}},
    "types": {"tags": ["echo"]},
}
#: With it the runtime level starts the server and plays this plan.
EXECUTION = {"probe_path": "validation/runtime.json"}
PLAN = {"plan_schema_version": "1", "reset": {"episode_id": "ep-1", "seed": 7},
        "actions": [{"message": "hi"}, {"message": "hello"}]}


def folder(scaffold: Path, tmp_path: Path, name: str, block: dict[str, Any] | None,
           plan: dict[str, Any] | None = None) -> Path:
    """A copy of the scaffold at ``tmp_path/name`` whose openenv.yaml carries ``block`` (None: no block), and the
    runtime ``plan`` when given (the block then declares its execution)."""
    target = tmp_path / name / "demo_env"
    shutil.copytree(scaffold, target)
    manifest = yaml.safe_load((target / "openenv.yaml").read_text())
    if block is not None:
        manifest["validation"] = {**block, **({"execution": EXECUTION} if plan is not None else {})}
    (target / "openenv.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    if plan is not None:
        (target / "validation").mkdir()
        (target / "validation" / "runtime.json").write_text(json.dumps(plan))
    return target


def statuses(report: dict[str, Any]) -> dict[str, str]:
    """``{check_id: status}`` of a report's results."""
    return {r["check_id"]: r["status"] for r in report["results"]}
