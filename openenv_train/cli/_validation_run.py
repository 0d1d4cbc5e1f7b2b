"""One ``validate --level`` run of an env folder, as OpenEnv 0.10's ``run_validation``: parse, grade, policy, report.

The folder must carry exactly one well-known file (``openenv.yaml``; a ``task.toml`` or front-mattered
``task.md`` beside it is ambiguous). Static: ``static.manifest``. Runtime (needs ``validation.execution`` and its
runtime plan): the folder's server is started and one planned episode recorded over ``/ws``, then graded.
Semantic: OpenEnv's contract graders, none of which ships in openenv 0.10.0, so each is SKIPped, as there. Every
policy check of the levels run that no grader answered is SKIPped with the reason, so the verdict is at best
WARN until graders exist. The one difference: OpenEnv builds the folder's Docker image and runs it; ours starts
it as ``openenv-train serve FOLDER`` does (a local process), so a machine without Docker still validates it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import stat
import time
import urllib.request
from pathlib import Path
from typing import Any

from ..core import OpenEnvTrainError
from ._validation_graders import RUNTIME_GRADERS, Evidence, check_result, runtime_results, static_manifest
from ._validation_manifest import (
    Manifest,
    ManifestProblem,
    ManifestV2,
    RuntimePlan,
    RuntimePlanProblem,
    load_runtime_plan,
    parse_manifest,
)
from ._validation_policy import PolicyEntry, policy_entries, verdict

__all__ = ["LocalServer", "UnsupportedFolder", "detect_signature", "run_validation"]

#: Only reward-tree and task-API envs get these graders (OpenEnv's ``_applicable``).
_RUBRIC_CHECKS = ("runtime.rubric_introspectable", "runtime.reward_attribution")
_DIGEST_SKIP = {".git", "__pycache__", ".venv", ".worktrees", "outputs"}


class UnsupportedFolder(OpenEnvTrainError, ValueError):
    """Not a package this validator reads (OpenEnv's exit status 2): not a folder, none or several well-known files."""


def detect_signature(folder: Path) -> str:
    """``openenv.yaml``, the one format this build parses.

    Raises:
        UnsupportedFolder: not a folder, an ambiguous one, or none of the well-known files.
    """
    if not folder.is_dir():
        raise UnsupportedFolder(f"not a package directory: {folder}")
    task_md = folder / "task.md"
    frontmatter = task_md.is_file() and task_md.read_text(errors="replace").lstrip().startswith("---")
    found = [name for name, present in (("openenv.yaml", (folder / "openenv.yaml").is_file()),
                                        ("task.md", frontmatter), ("task.toml", (folder / "task.toml").is_file()))
             if present]
    if len(found) > 1:
        raise UnsupportedFolder(f"ambiguous package: {folder} matches multiple signatures ({', '.join(sorted(found))});"
                                " a package must carry exactly one well-known file")
    if found != ["openenv.yaml"]:
        raise UnsupportedFolder(f"unrecognized package: {folder} contains none of the well-known files this build can "
                                "parse (openenv.yaml); 'openenv-train init NAME' writes one")
    return "openenv.yaml"


def source_digest(folder: Path) -> str:
    """sha256 over the folder's files (relative paths and contents), as OpenEnv's; raises ValueError on a link."""
    digest = hashlib.sha256()
    files = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder)
        if any(part in _DIGEST_SKIP for part in relative.parts):
            continue
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            raise ValueError("validation source may not contain symbolic links")
        if stat.S_ISREG(mode):
            files.append((relative.as_posix(), path))
        elif not stat.S_ISDIR(mode):
            raise ValueError("validation source must contain regular files")
    for relative_name, path in sorted(files):
        digest.update(relative_name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class LocalServer:
    """The folder's server, started once on first use (``openenv-train serve FOLDER``) and stopped by :meth:`stop`."""

    def __init__(self, folder: Path, timeout_s: float) -> None:
        self.folder, self.timeout_s = folder, timeout_s
        self.url: str | None = None
        self.error = ""
        self._provider: Any = None

    def start(self) -> str | None:
        """Its base URL; None when it did not start (``error`` says why)."""
        from ..core import ServerStartError
        from ..launch import LocalProcessProvider

        if self._provider is None:
            self._provider = LocalProcessProvider(str(self.folder), startup_timeout_s=max(60.0, self.timeout_s))
            try:
                self.url = asyncio.run(self._provider.start()).base_url
            except ServerStartError as exc:
                self.error = " | ".join(str(exc).splitlines()[-5:])[:400]
        return self.url

    def stop(self) -> None:
        if self._provider is not None and self._provider.started:
            asyncio.run(self._provider.stop())


def collect_episode(base_url: str, plan: RuntimePlan, *, episode_timeout_s: float) -> Evidence:
    """``/schema``, then one ``/ws`` session: reset, state, and step + state per planned action until done."""
    from websockets.sync.client import connect

    deadline = time.monotonic() + episode_timeout_s
    evidence, phase = Evidence(), "schema"

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("episode deadline exceeded")
        return left

    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/schema", timeout=remaining()) as reply:
            schema = json.loads(reply.read(1024 * 1024 + 1))
        if not isinstance(schema, dict) or "observation" not in schema:
            raise ValueError("missing observation schema")
        evidence.observation_schema_json = json.dumps(schema["observation"], allow_nan=False)
        if "reset_observation" in schema:
            evidence.reset_schema_json = json.dumps(schema["reset_observation"], allow_nan=False)
        phase = "connect"
        url = base_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1).rstrip("/") + "/ws"
        with connect(url, open_timeout=remaining(), close_timeout=1, max_size=2**20) as ws:

            def exchange(operation: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
                nonlocal phase
                phase = operation
                request = json.dumps({"type": operation, **({"data": data} if data is not None else {})})
                ws.send(request)
                raw = ws.recv(timeout=remaining())
                if not isinstance(raw, str):
                    raise ValueError("binary response is not the JSON protocol")
                evidence.exchanges.append((operation, request, raw))
                reply = json.loads(raw)
                if isinstance(reply, dict) and reply.get("type") == "error":
                    raise ValueError("server returned an error")
                expected = "state" if operation == "state" else "observation"
                if not isinstance(reply, dict) or reply.get("type") != expected or not isinstance(reply.get("data"),
                                                                                                   dict):
                    raise ValueError("unexpected response envelope")
                data_out: dict[str, Any] = reply["data"]
                return data_out

            observation = exchange("reset", {**plan.reset.options, "seed": plan.reset.seed,
                                             "episode_id": plan.reset.episode_id})
            exchange("state")
            for action in plan.actions:
                if observation.get("done") is True:
                    break
                observation = exchange("step", action)
                exchange("state")
            ws.send(json.dumps({"type": "close"}))
    except Exception as exc:
        evidence.failure_reason = f"{phase} failed ({_error_code(evidence) or type(exc).__name__})"
    return evidence


def _error_code(evidence: Evidence) -> str:
    """The error code of the last reply, if it was an error frame (the reason collection stopped)."""
    try:
        last = json.loads(evidence.exchanges[-1][2]) if evidence.exchanges else None
    except ValueError:
        return ""
    data = last.get("data") if isinstance(last, dict) and last.get("type") == "error" else None
    return str(data.get("code") or "") if isinstance(data, dict) else ""


def _runtime(folder: Path, manifest: Manifest, server: LocalServer, skip_build: bool) -> tuple[list[dict[str, Any]],
                                                                                               bool]:
    """``runtime.startup`` and the runtime graders' results; whether the subject was started (a level run)."""
    started = time.monotonic()

    def startup(status: str, reason: str, **extra: Any) -> dict[str, Any]:
        return check_result("runtime.startup", status, [reason], started=started, **extra)

    if skip_build:
        return [startup("skip", "--skip-build: build-dependent runtime checks skipped")], False
    if not isinstance(manifest, ManifestV2):
        return [startup("skip", "missing validation.execution declaration and runtime plan")], False
    try:
        plan = load_runtime_plan(folder, manifest.execution)
    except RuntimePlanProblem as exc:
        return [startup("fail", str(exc)[:4096])], False
    if manifest.execution.requires_credentials:
        return [startup("skip", "credential_delivery is deferred for this release")], False
    if manifest.network.mode != "public":  # a local process cannot be held to no-network or an allowlist
        return [startup("skip", f"provider cannot enforce network mode {manifest.network.mode}")], False
    if manifest.resources.gpus:
        return [startup("skip", "missing provider capability: gpu")], False
    url = server.start()
    if url is None:
        return [startup("fail", f"the folder's server did not start: {server.error}")], True
    evidence = collect_episode(url, plan, episode_timeout_s=manifest.resources.episode_timeout_s)
    if evidence.failure_reason:
        result = startup("fail", evidence.failure_reason)
    else:
        result = startup("pass", "subject built and reached its control endpoint",
                         measured={"provider": "openenv-train serve (local process)", "image_ref": url})
    return [result, *runtime_results(manifest, evidence, result["status"] == "pass")], True


def _unanswered(entries: dict[str, PolicyEntry], results: list[dict[str, Any]], manifest: Manifest | None,
                level: int) -> list[dict[str, Any]]:
    """SKIPs for the runtime and semantic checks of the levels run that no result answers (OpenEnv's inventory)."""
    present = {r["check_id"] for r in results}
    implemented = {"runtime.startup", *RUNTIME_GRADERS}
    skips = []
    for entry in entries.values():
        if entry.level not in (2, 3) or entry.level > level or entry.check_id in present:
            continue
        if manifest is not None and entry.check_id not in implemented:
            if entry.check_id in _RUBRIC_CHECKS and not manifest.capabilities.rubric_tree:
                continue
            if entry.check_id == "runtime.task_declaration_accuracy" and not (
                    manifest.capabilities.task_api or manifest.capabilities.declared_task_count):
                continue
        reason = "grader not implemented in this build"
        if manifest is None:
            reason = "unmet dependency: valid manifest"
        elif entry.check_id in RUNTIME_GRADERS:
            reason = "unmet dependency: runtime.startup"
        skips.append(check_result(entry.check_id, "skip", [reason]))
    return skips


def run_validation(folder: Path, *, level: int, policy: str | None, server: LocalServer,
                   skip_build: bool = False) -> dict[str, Any]:
    """The report of every check up to ``level`` (1..3) under ``policy`` (None: OpenEnv's default), in OpenEnv's
    report schema.

    Raises:
        UnsupportedFolder: not a package this validator reads.
        ValueError: an unknown policy, or v1 with a runtime level.
    """
    version, entries = policy_entries(policy, level)
    signature = detect_signature(folder)
    try:
        digest = source_digest(folder)
    except (ValueError, OSError):
        digest = ""
    results: list[dict[str, Any]] = []
    manifest: Manifest | None = None
    parse_started = time.monotonic()
    if not digest:
        results.append(check_result("static.manifest", "error",
                                    ["package source could not be verified before validation"], started=parse_started))
    else:
        try:
            manifest = parse_manifest(folder)
        except ManifestProblem as exc:
            results.append(check_result("static.manifest", "fail", exc.errors, measured={"schema_errors": len(exc.errors)},
                                        remediation=exc.remediation, started=parse_started))
    levels = [1]
    if manifest is not None:
        results.append(static_manifest(manifest))
        if level >= 2:
            runtime, attempted = _runtime(folder, manifest, server, skip_build)
            results += runtime
            levels += [2] if attempted else []
    if level >= 2:
        results += _unanswered(entries, results, manifest, level)
        try:
            after = source_digest(folder) if digest else None
        except (ValueError, OSError):
            after = None
        if digest and after != digest:
            problem = ("package source changed during validation" if after is not None
                       else "package source could not be verified after validation")
            invalidated = {"runtime.startup", *RUNTIME_GRADERS}
            results = [check_result(r["check_id"], "skip", [f"unmet dependency: runtime.startup ({problem})"])
                       if r["check_id"] in invalidated else r for r in results if r["check_id"] != "runtime.startup"]
            results.append(check_result("runtime.startup", "error", [problem]))
    schema_version = "2" if level >= 2 or isinstance(manifest, ManifestV2) else "1"
    return {"report_schema_version": schema_version, "target": str(folder), "source_digest": digest,
            "signature": signature, "manifest": manifest.model_dump(mode="json") if manifest is not None else None,
            "policy_version": version, "lane": "local", "levels_run": levels, "results": results,
            "verdict": verdict(results, entries)}

