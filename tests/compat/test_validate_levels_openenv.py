"""``validate --level/--policy`` against openenv 0.10's own validator on the same env folders: the same check ids,
statuses, levels run and verdict; our JSON report (less our ``ours`` list) parses as their ``ValidationReport``.

Their runtime level builds the folder's Docker image; ours starts the folder's server as a local process. So
that both grade the same running server here, their ``run_validation`` gets a provider that starts it as ours does
(their ``provider=`` hook), with the capabilities ours claims (an image build, no network measurement).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli._validation_folders import BLOCK, PLAN, folder, statuses
from tests.compat._release import CURRENT

if CURRENT:
    from openenv.validation import ProviderCapability, load_policy, run_validation
    from openenv.validation.report import ValidationReport, ValidationReportV2
    from openenv.validation.types import Level

pytestmark = pytest.mark.skipif(not CURRENT, reason="validation levels and policies came with openenv 0.10")

ROOT = Path(__file__).resolve().parents[2]


class _Running:
    def __init__(self, provider: Any, base_url: str) -> None:
        self.provider, self.base_url = provider, base_url

    def inspect(self) -> dict[str, Any]:
        return {}

    def logs(self, max_bytes: int = 65536) -> str:
        return ""

    def exec(self, argv: list[str], timeout_s: float) -> Any:
        raise NotImplementedError("a local process offers no exec")

    def stop(self) -> None:
        asyncio.run(self.provider.stop())


class LocalServeProvider:
    """Their ValidationProvider protocol over ``openenv-train serve FOLDER`` (what our runtime level starts)."""

    name = "openenv-train-serve"
    supported_network_modes = frozenset({"public"})

    def __init__(self) -> None:
        self.capabilities = frozenset({ProviderCapability.IMAGE_BUILD})
        self.root: Path | None = None

    def build(self, root: Path, execution: Any) -> str:
        self.root = root
        return "sha256:" + "0" * 64

    def start(self, spec: Any) -> _Running:
        from openenv_train.launch import LocalProcessProvider

        provider = LocalProcessProvider(str(self.root), startup_timeout_s=120.0)
        return _Running(provider, asyncio.run(provider.start()).base_url)


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    parent = tmp_path_factory.mktemp("init")
    done = subprocess.run([sys.executable, "-m", "openenv_train.cli", "init", "demo_env", "-o", str(parent)],
                          capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return parent / "demo_env"


def _ours(target: Path, level: str, policy: str | None) -> tuple[int, dict[str, Any]]:
    args = ["validate", str(target), "--level", level, "--json", *(["--policy", policy] if policy else [])]
    done = subprocess.run([sys.executable, "-m", "openenv_train.cli", *args], capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.mark.timeout(600)
@pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager:DeprecationWarning")  # theirs
@pytest.mark.parametrize(("case", "level", "policy"), [
    ("no_block", "static", None),
    ("good", "static", "v1"),
    ("loose", "static", None),
    ("bad_schema", "static", None),
    ("good", "semantic", None),
    ("no_block", "runtime", "v2"),
    ("planned", "runtime", None),
    ("planned_narrow", "semantic", None),
    ("no_network", "runtime", None),
])
def test_our_verdicts_equal_openenvs(scaffold: Path, tmp_path: Path, case: str, level: str, policy: str | None) -> None:
    blocks: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = {
        "no_block": (None, None),
        "good": (BLOCK, None),
        "loose": ({**BLOCK, "reward": {**BLOCK["reward"], "floor_margin": 0.01}}, None),
        "bad_schema": ({**BLOCK, "types": {"tags": []}, "resources": {"cpu": 0}}, None),
        "planned": (BLOCK, PLAN),
        "planned_narrow": ({**BLOCK, "reward": {**BLOCK["reward"], "range": [0.0, 0.3]}}, PLAN),
        "no_network": ({**BLOCK, "network": {"mode": "no-network"}}, PLAN),
    }
    target = folder(scaffold, tmp_path, case, *blocks[case])
    theirs = run_validation(target, max_level={"static": Level.STATIC, "runtime": Level.RUNTIME,
                                               "semantic": Level.SEMANTIC}[level],
                            policy=load_policy(policy) if policy else None, provider=LocalServeProvider())
    rc, ours = _ours(target, level, policy)
    their_json = json.loads(theirs.model_dump_json())
    assert statuses(ours) == statuses(their_json), (ours["results"], their_json["results"])
    assert [r["check_id"] for r in ours["results"]] == [r["check_id"] for r in their_json["results"]]
    for key in ("verdict", "levels_run", "policy_version", "manifest", "report_schema_version", "source_digest"):
        assert ours[key] == their_json[key], key
    assert rc == (1 if theirs.verdict.value == "fail" else 0)  # their CLI's exit status for the verdict
    model = ValidationReportV2 if ours["report_schema_version"] == "2" else ValidationReport
    model.model_validate({k: v for k, v in ours.items() if k != "ours"})


@pytest.mark.timeout(600)
def test_url_criteria_equal_openenvs_on_both_servers(oe_counter_url: str) -> None:
    """``--url`` (OpenEnv ignores the level there): their six criteria, passed alike, on our server and theirs."""
    from openenv.cli._validation import validate_running_environment

    from openenv_train.launch import LocalProcessProvider

    provider = LocalProcessProvider("counter", startup_timeout_s=120.0)
    ours_url = asyncio.run(provider.start()).base_url
    try:
        for url in (ours_url, oe_counter_url):
            theirs = validate_running_environment(url, timeout_s=10)
            done = subprocess.run([sys.executable, "-m", "openenv_train.cli", "validate", "--url", url, "--level",
                                   "runtime", "--timeout", "10", "--json"], capture_output=True, text=True, timeout=300,
                                  env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
            ours = json.loads(done.stdout)
            assert [(c["id"], c["passed"]) for c in ours["criteria"]] == [
                (c["id"], c["passed"]) for c in theirs["criteria"]], (url, ours["criteria"], theirs["criteria"])
            for key in ("passed", "mode", "standard_version", "standard_profile"):
                assert ours[key] == theirs[key], (url, key)
            assert done.returncode == (0 if theirs["passed"] else 1)
    finally:
        asyncio.run(provider.stop())
