"""OpenEnv 0.10's graders, as pure functions over a manifest and the wire evidence of one episode.

``static.manifest`` checks declared tolerances against the policy's bounds; the runtime graders read the raw
``/ws`` exchanges the runner recorded (reset, then step and state until done): ``runtime.reward_well_formed``
(numbers within the declared range), ``runtime.observation_schema`` (each observation against ``/schema``, JSON
Schema 2020-12), ``runtime.state_contract`` (episode id and step count), ``runtime.network_policy`` (needs a
provider that measures the network: SKIPped by ours). A result is a dict in OpenEnv's report shape.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from ._validation_manifest import Manifest
from ._validation_policy import BOUNDS

__all__ = ["Evidence", "check_result", "runtime_results", "static_manifest"]


def check_result(check_id: str, status: str, evidence: list[str], *, measured: dict[str, Any] | None = None,
                 remediation: str | None = None, started: float | None = None) -> dict[str, Any]:
    """One check's result, as OpenEnv's ``CheckResult`` serialises."""
    return {"check_id": check_id, "status": status, "measured": measured or {}, "evidence": evidence,
            "remediation": remediation, "duration_s": time.monotonic() - started if started is not None else 0.0}


def static_manifest(manifest: Manifest) -> dict[str, Any]:
    """``static.manifest``: the declared tolerances and timeout within the policy's bounds."""
    started = time.monotonic()
    reward, timeout = manifest.reward, manifest.resources.episode_timeout_s
    problems = []
    if reward.oracle_tolerance > BOUNDS["max_oracle_tolerance"]:
        problems.append(f"declared oracle_tolerance {reward.oracle_tolerance} exceeds the policy maximum "
                        f"{BOUNDS['max_oracle_tolerance']}")
    if reward.floor_margin < BOUNDS["min_floor_margin"]:
        problems.append(f"declared floor_margin {reward.floor_margin} is below the policy minimum "
                        f"{BOUNDS['min_floor_margin']}")
    if reward.variance_tolerance is not None and reward.variance_tolerance > BOUNDS["max_variance_tolerance"]:
        problems.append(f"declared variance_tolerance {reward.variance_tolerance} exceeds the policy maximum "
                        f"{BOUNDS['max_variance_tolerance']}")
    if timeout > BOUNDS["max_episode_timeout_s"]:
        problems.append(f"declared episode_timeout_s {timeout} exceeds the policy maximum "
                        f"{BOUNDS['max_episode_timeout_s']}")
    return check_result(
        "static.manifest", "fail" if problems else "pass",
        problems or ["manifest is schema-valid and within policy bounds"],
        measured={"oracle_tolerance": reward.oracle_tolerance, "floor_margin": reward.floor_margin,
                  "variance_tolerance": reward.variance_tolerance, "episode_timeout_s": timeout,
                  "bounds": dict(BOUNDS)},
        remediation="declare tolerances within the severity policy's bounds" if problems else None, started=started)


@dataclass
class Evidence:
    """One measured episode: ``(operation, request_json, response_json)`` rows and the ``/schema`` observation
    schemas; ``failure_reason`` when collection stopped early."""

    exchanges: list[tuple[str, str, str]] = field(default_factory=list)
    observation_schema_json: str | None = None
    reset_schema_json: str | None = None
    failure_reason: str | None = None


def _remote_reference(value: Any) -> bool:
    if isinstance(value, dict):
        return any((key in ("$ref", "$dynamicRef") and (not isinstance(child, str) or not child.startswith("#")))
                   or _remote_reference(child) for key, child in value.items())
    if isinstance(value, list):
        return any(_remote_reference(child) for child in value)
    return False


def _rewards(manifest: Manifest, evidence: Evidence) -> list[str]:
    problems, observations = [], 0
    low, high = manifest.reward.range
    for index, (operation, _, response) in enumerate(evidence.exchanges):
        if operation not in ("reset", "step"):
            continue
        observations += 1
        data = json.loads(response)["data"]
        if not isinstance(data, dict):
            problems.append(f"exchange {index}: malformed observation envelope")
        elif "reward" not in data:
            problems.append(f"exchange {index}: missing reward")
        elif not (data["reward"] is None and operation == "reset"):
            reward = data["reward"]
            if (type(reward) not in (int, float) or (type(reward) is float and not math.isfinite(reward))
                    or not low <= reward <= high):
                problems.append(f"exchange {index}: reward must be finite and in range")
    return problems if observations else [*problems, "no observations were measured"]


def _observations(manifest: Manifest, evidence: Evidence) -> list[str]:
    if evidence.observation_schema_json is None:
        return ["observation schema unavailable"]
    schemas = {"step": json.loads(evidence.observation_schema_json)}
    if _remote_reference(schemas["step"]):
        return ["observation schema has a non-local reference"]
    if evidence.reset_schema_json is not None:
        schemas["reset"] = json.loads(evidence.reset_schema_json)
        if _remote_reference(schemas["reset"]):
            return ["reset observation schema has a non-local reference"]
    problems: list[str] = []
    rows = []
    for index, (operation, _, response) in enumerate(evidence.exchanges):
        if operation not in ("reset", "step"):
            continue
        reply = json.loads(response)
        data = reply["data"]
        if (reply.get("type") != "observation" or not isinstance(data, dict)
                or not isinstance(data.get("observation"), dict) or type(data.get("done")) is not bool
                or "reward" not in data):
            problems.append(f"exchange {index}: malformed observation envelope")
            continue
        rows.append((index, operation, data))
    if not rows and not problems:
        problems.append("no observations were measured")
    return problems + _schema_errors(schemas, rows)


def _schema_errors(schemas: dict[str, Any], rows: list[tuple[int, str, dict[str, Any]]]) -> list[str]:
    try:
        from jsonschema import Draft202012Validator
        from referencing import Registry
    except ImportError:  # the grader's result is then an ERROR naming the fix (see runtime_results)
        raise ModuleNotFoundError("jsonschema is not installed: pip install 'openenv-train[validate]'") from None
    problems: list[str] = []
    try:
        validators = {}
        for operation, schema in schemas.items():
            Draft202012Validator.check_schema(schema)
            validators[operation] = Draft202012Validator(schema, registry=Registry())  # no file or network lookups
        validators.setdefault("reset", validators["step"])
        for index, operation, data in rows:
            observation = {**data["observation"], "reward": data["reward"], "done": data["done"]}
            for error in validators[operation].iter_errors(observation):
                where = "/".join(str(x) for x in error.absolute_schema_path)[:160]
                missing = ""
                if error.validator == "required":
                    names = [n for n in error.validator_value if n not in error.instance]
                    missing = "; missing properties: " + json.dumps(names[:5])[:160]
                problems.append(f"exchange {index}: schema mismatch at {where or '/'} ({error.validator}){missing}")
                if len(problems) >= 20:
                    return problems
    except Exception:
        problems.append("invalid or unevaluable observation schema")
    return problems


def _state(manifest: Manifest, evidence: Evidence) -> list[str]:
    problems: list[str] = []
    episode_id, steps, states = None, 0, 0
    for index, (operation, request, response) in enumerate(evidence.exchanges):
        if operation == "reset":
            episode_id, steps = json.loads(request)["data"]["episode_id"], 0
        elif operation == "step":
            steps += 1
        elif operation == "state":
            states += 1
            reply = json.loads(response)
            data = reply["data"]
            if not isinstance(data, dict):
                problems.append(f"exchange {index}: malformed state envelope")
                continue
            if reply.get("type") != "state" or data.get("episode_id") != episode_id:
                problems.append(f"exchange {index}: episode_id differs from reset")
            if type(data.get("step_count")) is not int or data["step_count"] != steps:
                problems.append(f"exchange {index}: incorrect step_count")
    return problems if states else [*problems, "no state snapshots were measured"]


_GRADERS = {"runtime.observation_schema": _observations, "runtime.reward_well_formed": _rewards,
            "runtime.state_contract": _state}
#: The runtime graders that ship, in the order OpenEnv runs them (by id); network_policy needs a provider that
#: measures the subject's network, which ours is not.
RUNTIME_GRADERS = ("runtime.network_policy", *_GRADERS)


def _grade(check_id: str, manifest: Manifest, evidence: Evidence) -> dict[str, Any]:
    started = time.monotonic()
    if evidence.failure_reason:
        return check_result(check_id, "skip", ["unmet dependency: runtime.startup (collection incomplete)"])
    if not any(operation == "step" for operation, _, _ in evidence.exchanges):
        return check_result(check_id, "skip", ["no step was observed; the episode contract is incomplete"])
    try:
        problems = _GRADERS[check_id](manifest, evidence)
    except ModuleNotFoundError as exc:
        return check_result(check_id, "error", [str(exc)], remediation="pip install 'openenv-train[validate]'",
                            started=started)
    except (ValueError, TypeError, KeyError, RecursionError, OverflowError):
        problems = ["malformed runtime evidence"]
    return check_result(check_id, "fail" if problems else "pass", problems[:20] or ["observed runtime contract holds"],
                        measured={"exchanges": len(evidence.exchanges)},
                        remediation="Fix the reported runtime contract violations." if problems else None,
                        started=started)


def runtime_results(manifest: Manifest, evidence: Evidence, startup_passed: bool) -> list[dict[str, Any]]:
    """The runtime graders' results after ``runtime.startup`` (each SKIPs, naming why, when it cannot run)."""
    results = []
    for check_id in RUNTIME_GRADERS:
        reasons = [] if startup_passed else ["unmet dependencies: runtime.startup"]
        if check_id == "runtime.network_policy":
            reasons.append("missing provider capabilities: network_policy")
        results.append(check_result(check_id, "skip", reasons) if reasons else _grade(check_id, manifest, evidence))
    return results
