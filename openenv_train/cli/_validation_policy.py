"""OpenEnv 0.10's validation levels and severity policies (``severity-v1``/``v2``), and the verdict they give.

Graders report a status per check id (pass, fail, skip, error); only the policy gives a check its severity
(fail, warn, advisory). The verdict: any ERROR fails, a FAIL of a ``fail``-severity check fails, any other FAIL
or any SKIP makes it WARN, else PASS. v2 adds ``runtime.startup`` (so runtime levels need it); v1 is for
``--level static`` only. The hub and statistical ids are operators' (hub lane) and never in a local run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BOUNDS", "LEVELS", "POLICIES", "PolicyEntry", "level_number", "policy_entries", "verdict"]

#: The levels in order (OpenEnv's ``Level``: static 1, runtime 2, semantic 3; statistical 4 is the hub's).
LEVELS = ("static", "runtime", "semantic")

#: Ceilings on what a manifest may declare (the same in v1 and v2).
BOUNDS = {"max_oracle_tolerance": 0.1, "min_floor_margin": 0.1, "max_variance_tolerance": 0.2,
          "max_episode_timeout_s": 3600.0}


@dataclass(frozen=True)
class PolicyEntry:
    """One check id under a policy: its level (1..4), lane (local or hub) and severity."""

    check_id: str
    level: int
    lane: str
    severity: str


_STATIC = [("manifest", "fail"), ("reproducible_build", "fail"), ("image_hygiene", "warn"), ("layout", "warn"),
           ("sbom", "fail"), ("oci_labels", "fail"), ("resource_declaration", "fail"), ("timeout_ceiling", "fail"),
           ("dependency_pinning", "fail"), ("task_distribution_pinning", "fail")]
_RUNTIME = [("reward_well_formed", "fail"), ("rubric_introspectable", "warn"), ("observation_schema", "fail"),
            ("state_contract", "fail"), ("trajectory_record", "warn"), ("reward_attribution", "warn"),
            ("tool_declaration_accuracy", "fail"), ("task_declaration_accuracy", "fail"), ("seed_control", "fail"),
            ("episode_determinism", "fail"), ("network_policy", "fail"), ("host_containment", "fail"),
            ("resource_bounds", "fail"), ("episode_isolation", "fail"), ("oracle_containment", "fail")]
#: OpenEnv's semantic level: its contract graders (none ships in openenv 0.10.0: each is SKIPped there and here).
SEMANTIC = ["oracle_max", "floor_gap", "canary_floor", "no_solution_leakage", "verifier_determinism",
            "verifier_portability", "resource_envelope", "replayability"]
_HUB = [("hub.layer_isolation", 1, "warn"), ("hub.time_to_first_work", 2, "warn"), ("hub.cosign_signature", 1, "warn"),
        ("hub.cross_host_determinism", 2, "fail"), ("hub.immutable_versioning", 1, "fail"),
        ("statistical.reward_reachability", 4, "fail"), ("statistical.difficulty_separation", 4, "fail"),
        ("statistical.headroom", 4, "warn"), ("statistical.variance_bound", 4, "fail"),
        ("statistical.training_signal", 4, "advisory"), ("statistical.adversarial_floor", 4, "fail"),
        ("statistical.gameability_gap", 4, "warn")]


def _policy(with_startup: bool) -> list[PolicyEntry]:
    entries = [PolicyEntry(f"static.{name}", 1, "local", severity) for name, severity in _STATIC]
    if with_startup:
        entries.append(PolicyEntry("runtime.startup", 2, "local", "fail"))
    entries += [PolicyEntry(f"runtime.{name}", 2, "local", severity) for name, severity in _RUNTIME]
    entries += [PolicyEntry(f"semantic.{name}", 3, "local", "fail") for name in SEMANTIC]
    return entries + [PolicyEntry(check_id, level, "hub", severity) for check_id, level, severity in _HUB]


#: Every policy version by name, as ``--policy`` takes it.
POLICIES: dict[str, list[PolicyEntry]] = {"v1": _policy(False), "v2": _policy(True)}


def level_number(level: str) -> int:
    """1, 2 or 3 for static, runtime, semantic.

    Raises:
        ValueError: an unknown level (the message lists the known ones).
    """
    try:
        return LEVELS.index(level.lower()) + 1
    except ValueError:
        raise ValueError(f"unknown level {level!r}; use one of: {', '.join(LEVELS)}") from None


def policy_entries(version: str | None, level: int) -> tuple[str, dict[str, PolicyEntry]]:
    """The policy's version and its local-lane entries by check id; None picks OpenEnv's default (v1 for the
    static level, v2 above it).

    Raises:
        ValueError: an unknown version, or v1 with a runtime level (OpenEnv's refusal).
    """
    version = version or ("v2" if level >= 2 else "v1")
    if version not in POLICIES:
        raise ValueError(f"unknown severity policy {version!r}; use one of: {', '.join(POLICIES)}")
    entries = {e.check_id: e for e in POLICIES[version] if e.lane == "local"}
    if level >= 2 and "runtime.startup" not in entries:
        raise ValueError(f"runtime validation requires policy v2; {version} supports --level static")
    return version, entries


def verdict(results: list[dict[str, Any]], entries: dict[str, PolicyEntry]) -> str:
    """``pass``, ``warn`` or ``fail`` for these results under the policy (OpenEnv's ``apply_policy``).

    Raises:
        KeyError: a result whose id the policy does not know (a bug of ours: every id we emit is in it).
    """
    outcome = "pass"
    for result in results:
        entry, status = entries[result["check_id"]], result["status"]
        if status == "error" or (status == "fail" and entry.severity == "fail"):
            return "fail"
        if status in ("fail", "skip"):
            outcome = "warn"
    return outcome
