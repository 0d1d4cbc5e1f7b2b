"""``validate --level static|runtime|semantic`` and ``--policy``: OpenEnv 0.10's validation (its manifest, graders,
severity policies and verdict), our checks beside it as ``ours.*``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ._validation_folders import BLOCK, PLAN, folder, statuses
from .conftest import ROOT, cli, stop, wait_ready


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_static_grades_the_validation_block_against_the_policy_bounds(scaffold: Path, tmp_path: Path) -> None:
    done = cli("validate", str(scaffold), "--level", "static", "--json")
    report = _report(done)
    assert done.returncode == 1 and report["verdict"] == "fail" and report["policy_version"] == "v1", done.stdout
    assert statuses(report) == {"static.manifest": "fail"} and report["levels_run"] == [1]
    assert "no `validation:` block" in report["results"][0]["evidence"][0]
    assert all(r["status"] == "pass" for r in report["ours"])  # our folder checks: the scaffold is fine
    good = folder(scaffold, tmp_path, "good", BLOCK)
    report = _report(cli("validate", str(good), "--level", "static", "--json"))
    assert report["verdict"] == "pass" and report["manifest"]["reward"]["floor_margin"] == 0.2
    loose = folder(scaffold, tmp_path, "loose", {**BLOCK, "reward": {**BLOCK["reward"], "oracle_tolerance": 0.5}})
    done = cli("validate", str(loose), "--policy", "v1", "--level", "static")
    assert done.returncode == 1 and "oracle_tolerance 0.5 exceeds the policy maximum 0.1" in done.stdout
    assert "FAIL  static.manifest" in done.stdout and "Verdict: FAIL" in done.stdout


def test_semantic_without_a_runtime_plan_warns_and_our_checks_still_drive_the_server(scaffold: Path,
                                                                                     tmp_path: Path) -> None:
    good = folder(scaffold, tmp_path, "good", BLOCK)
    done = cli("validate", str(good), "--level", "semantic", "--json")
    report = _report(done)
    found = statuses(report)
    assert done.returncode == 0 and report["verdict"] == "warn" and report["policy_version"] == "v2", done.stdout
    assert found["runtime.startup"] == "skip" and found["semantic.replayability"] == "skip"
    assert found["runtime.reward_well_formed"] == "skip" and "runtime.rubric_introspectable" not in found
    ours = {r["check_id"]: r["status"] for r in report["ours"]}
    assert ours["ours.startup"] == ours["ours.ws_reset_step"] == ours["ours.replayability"] == "pass", ours


def test_runtime_plays_the_plan_and_grades_the_episode(scaffold: Path, tmp_path: Path) -> None:
    ok = folder(scaffold, tmp_path, "ok", BLOCK, PLAN)
    narrow = folder(scaffold, tmp_path, "narrow", {**BLOCK, "reward": {**BLOCK["reward"], "range": [0.0, 0.3]}},
                    PLAN)  # "hello" earns 0.5, outside the declared range
    report = _report(cli("validate", str(ok), "--level", "runtime", "--json"))
    found = statuses(report)
    assert report["verdict"] == "warn" and report["levels_run"] == [1, 2], report
    assert {k: found[k] for k in ("runtime.startup", "runtime.reward_well_formed", "runtime.observation_schema",
                                  "runtime.state_contract", "runtime.network_policy")} == {
        "runtime.startup": "pass", "runtime.reward_well_formed": "pass", "runtime.observation_schema": "pass",
        "runtime.state_contract": "pass", "runtime.network_policy": "skip"}, report["results"]
    assert not any(k.startswith("semantic.") for k in found)
    done = cli("validate", str(narrow), "--level", "runtime")
    assert done.returncode == 1 and "FAIL  runtime.reward_well_formed" in done.stdout, done.stdout
    assert "exchange 4: reward must be finite and in range" in done.stdout


def test_bad_usage_and_foreign_folders_are_named(scaffold: Path, tmp_path: Path) -> None:
    done = cli("validate", str(scaffold), "--level", "dynamic")
    assert done.returncode == 2 and "unknown level 'dynamic'; use one of: static, runtime, semantic" in done.stderr
    done = cli("validate", str(scaffold), "--policy", "v9")
    assert done.returncode == 2 and "unknown severity policy 'v9'; use one of: v1, v2" in done.stderr
    done = cli("validate", str(scaffold), "--policy", "v1")  # alone it means OpenEnv's default level, semantic
    assert done.returncode == 2 and "runtime validation requires policy v2; v1 supports --level static" in done.stderr
    done = cli("validate", "--url", "http://127.0.0.1:1", "--level", "static")
    assert done.returncode == 2 and "--level static reads an env folder" in done.stderr
    (tmp_path / "empty").mkdir()
    done = cli("validate", str(tmp_path / "empty"), "--level", "static")
    assert done.returncode == 2 and "contains none of the well-known files" in done.stderr


def test_a_running_server_gets_openenvs_six_criteria_and_our_session_checks(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    server = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "serve", "counter", "--port", "0",
                               "--mode", "production", "--ready-file", str(ready)],
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    try:
        url = wait_ready(ready, server, timeout_s=90)
        done = cli("validate", "--url", url, "--level", "semantic", "--json")
        report = _report(done)
        assert done.returncode == 0 and report["passed"] and report["mode"] == "production", done.stdout
        assert [c["id"] for c in report["criteria"]] == [
            "openapi_version_available", "health_endpoint", "metadata_endpoint", "schema_endpoint", "mcp_endpoint",
            "mode_endpoint_consistency"]
        assert {"ours.ws_reset_step", "ours.replayability"} <= {r["check_id"] for r in report["ours"]}
    finally:
        stop(server)
    done = cli("validate", "--url", url, "--level", "runtime", "--json")  # the server is gone: every criterion fails
    report = _report(done)
    assert done.returncode == 1 and not any(c["passed"] for c in report["criteria"]) and report["ours"] == []
