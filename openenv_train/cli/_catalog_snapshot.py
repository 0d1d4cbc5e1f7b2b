"""Catalog snapshots in OpenEnv 0.10's schema (``0.1-draft``): versioned, metadata-only records of the env folders
committed to a Git repository, and the search over them.

Built from committed files only (``git ls-tree``/``cat-file`` at one revision); no env code is imported or run.
Each folder ``ROOT/NAME`` with an ``openenv.yaml`` becomes one revision-bound entry
(``urn:air:PUBLISHER:NAMESPACE:<sha256(uri, path)>:<commit>``) from its manifest, ``pyproject.toml`` and README
front matter; the snapshot's digest is the SHA-256 of its canonical JSON, as OpenEnv computes it, so either tool
reads the other's snapshots. Not read: ``discovery.json`` declarations (an entry that has one gets a warning).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import yaml

from ..core import OpenEnvTrainError

__all__ = ["CatalogError", "build_snapshot", "load_snapshot", "resolve", "search", "snapshot_digest"]

PROFILE = "0.1-draft"
_FILTERS = frozenset({"license", "provider", "artifact_availability", "name", "tags", "type"})
_MEDIA_TYPE = "application/vnd.openenv.environment-card+json"


class CatalogError(OpenEnvTrainError):
    """A snapshot could not be built, read or searched (the message says why)."""


def snapshot_digest(snapshot: dict[str, Any]) -> str:
    """``sha256:`` of the snapshot's canonical JSON without its digest (sorted keys, compact), as OpenEnv's."""
    payload = {k: v for k, v in snapshot.items() if k != "digest"}
    encoded = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return "sha256:" + hashlib.sha256(encoded.encode()).hexdigest()


def _repository_id(uri: str) -> str:
    parts = urlsplit(uri)
    identity = parts.path.removeprefix("/").removesuffix(".git")
    if (parts.scheme != "https" or parts.netloc.lower() != "github.com" or not parts.path.endswith(".git")
            or not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", identity)):
        raise CatalogError(f"--repository-uri must be a GitHub HTTPS clone URI (https://github.com/OWNER/REPO.git), "
                           f"got {uri!r}")
    return identity


class _Git:
    def __init__(self, repository: Path, revision: str) -> None:
        self.repository = repository
        try:
            self.revision = self._run("rev-parse", "--verify", "--end-of-options", f"{revision}^{{commit}}").strip()
        except CatalogError:
            raise CatalogError(f"{repository} has no commit {revision!r}; give a Git repository and a revision in "
                               "it (--revision)") from None
        self.files: dict[str, tuple[str, str]] = {}
        for row in self._run("ls-tree", "-r", "-z", self.revision).split("\0"):
            if row:
                meta, name = row.split("\t", 1)
                mode, kind, oid = meta.split()
                if kind == "blob":
                    self.files[name] = (mode, oid)

    def _run(self, *args: str) -> str:
        try:
            done = subprocess.run(["git", "--no-pager", "-C", str(self.repository), *args], capture_output=True,
                                  text=True, timeout=60, env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CatalogError(f"cannot run git on {self.repository}: {exc}") from None
        if done.returncode != 0:
            raise CatalogError(f"git {args[0]} failed in {self.repository}: {done.stderr.strip()[:200]}")
        return done.stdout

    def read(self, path: str) -> str | None:
        item = self.files.get(path)
        if item is None:
            return None
        if item[0] == "120000":
            raise CatalogError(f"metadata must be a regular tracked file, not a symlink: {path}")
        return self._run("cat-file", "blob", item[1])


def _license(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict):
        value = value.get("text")
        if value is None:
            return "unknown"
    if not isinstance(value, str) or not value.strip():
        return "unknown"
    value = value.strip()
    if value in ("unknown", "other"):
        return value
    try:
        from packaging.licenses import canonicalize_license_expression
    except ImportError:
        return value
    try:
        return str(canonicalize_license_expression(value))
    except ValueError:
        return "other"


def _front_matter(text: str | None) -> dict[str, Any]:
    if text is None or not text.startswith("---\n"):
        return {}
    lines = text.splitlines()
    try:
        loaded = yaml.safe_load("\n".join(lines[1:lines.index("---", 1)]))
    except (ValueError, yaml.YAMLError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _entry(git: _Git, path: str, uri: str, repo_id: str, publisher: str, namespace: str,
           root_project: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, str]]]:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    manifest = yaml.safe_load(git.read(f"{path}/openenv.yaml") or "")
    if not isinstance(manifest, dict):
        raise CatalogError("Metadata must be a mapping")
    project_text = git.read(f"{path}/pyproject.toml")
    project = tomllib.loads(project_text).get("project", {}) if project_text else {}
    readme = _front_matter(git.read(f"{path}/README.md"))
    sources = [(manifest, f"{path}/openenv.yaml"), (project, f"{path}/pyproject.toml#project"),
               (readme, f"{path}/README.md")]

    def field(key: str, among: list[tuple[dict[str, Any], str]]) -> tuple[Any, str | None]:
        for document, origin in among:
            if document.get(key) is not None:
                return document[key], f"{origin}{'.' if '#' in origin else '#'}{key}"
        return None, None

    name, name_origin = field("name", sources[:2])
    description, description_origin = field("description", sources)
    if not isinstance(name, str) or not name.strip():
        raise CatalogError("Environment needs a declared name")
    if not isinstance(description, str) or not description.strip():
        raise CatalogError("Environment needs an authored task description")
    issues = []
    if f"{path}/discovery.json" in git.files:
        issues.append({"path": path, "code": "declaration_ignored", "severity": "warning",
                       "message": "discovery.json is not read by openenv-train's catalog build"})
    provenance: dict[str, Any] = {"name": name_origin, "description": description_origin, "source": uri}
    declared = [(lic, origin) for lic, origin in ((_license(project.get("license")), f"{path}/pyproject.toml"),
                                                 (_license(readme.get("license")), f"{path}/README.md")) if lic]
    license_name, license_origin = "unknown", None
    if len({lic for lic, _ in declared}) > 1:
        issues.append({"path": path, "code": "license_conflict", "severity": "warning",
                       "message": "Package and README declarations do not identify one license"})
    elif declared:
        license_name, license_origin = declared[0]
    elif _license(root_project.get("license")):
        license_name, license_origin = _license(root_project.get("license")) or "unknown", "pyproject.toml"
        for filename in root_project.get("license-files", []):
            if isinstance(filename, str) and filename in git.files:
                license_origin = filename
                break
    if license_origin is not None:
        provenance["license"] = license_origin
    requirements = [d for d in project.get("dependencies", []) if canonicalize_name(Requirement(d).name) == "openenv"]
    revision = git.revision
    source = {"provider": "github", "id": repo_id, "uri": uri, "path": path, "revision": revision}
    card: dict[str, Any] = {
        "schema_version": PROFILE, "name": name, "description": description,
        "owner": {"authority": "github.com", "id": repo_id.split("/", 1)[0]}, "source": source,
        "artifact_availability": "resolvable",
        "artifacts": [{"kind": "git", "uri": uri, "path": path, "revision": revision}],
        "license": license_name, "interfaces": [{"role": "orchestration", "protocol": "openenv"}],
    }
    if license_name not in ("unknown",) and license_origin is not None:
        card["license_url"] = f"https://github.com/{repo_id}/blob/{revision}/{quote(license_origin, safe='/')}"
    if manifest.get("spec_version") is not None:
        card["manifest_spec_version"] = manifest["spec_version"]
        provenance["manifest_spec_version"] = f"{path}/openenv.yaml#spec_version"
    if requirements:
        card["framework_requirement"] = requirements[0]
        provenance["framework_requirement"] = f"{path}/pyproject.toml#project.dependencies"
    tags = readme.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise CatalogError("Tags must be an array of strings")
    locator = hashlib.sha256(f"{uri}\n{path}".encode()).hexdigest()
    return {
        "@context": "https://agenticresourcediscovery.org/context/v1",
        "identifier": f"urn:air:{publisher}:{namespace}:{locator}:{revision}", "displayName": name,
        "type": _MEDIA_TYPE, "data": card, "description": description, "tags": sorted(set(tags)),
        "capabilities": [], "representativeQueries": [], "metadata": {"provenance": provenance},
    }, issues


def build_snapshot(repository: Path, *, repository_uri: str, publisher: str, namespace: str = "openenv",
                   revision: str = "HEAD", root: str = "envs") -> dict[str, Any]:
    """A snapshot of the env folders committed under ``root`` at ``revision`` (complete unless an entry failed).

    Raises:
        CatalogError: a bad publisher, namespace, URI, repository, revision or root.
    """
    if not re.fullmatch(r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,63}", publisher):
        raise CatalogError(f"--publisher must be a DNS name you publish under (e.g. example.org), got {publisher!r}")
    if not re.fullmatch(r"[A-Za-z0-9._-]+", namespace):
        raise CatalogError(f"--namespace must be letters, digits, '.', '_' or '-', got {namespace!r}")
    repo_id = _repository_id(repository_uri)
    git = _Git(repository, revision)
    prefix = "" if root == "." else root.strip("/") + "/"
    if not any(path.startswith(prefix) for path in git.files):
        raise CatalogError(f"no committed files under --root {root!r} at {git.revision[:12]}")
    paths = sorted(p.rsplit("/", 1)[0] for p in git.files
                   if p.startswith(prefix) and p.endswith("/openenv.yaml") and len(p[len(prefix):].split("/")) == 2)
    root_text = git.read("pyproject.toml")
    root_project = tomllib.loads(root_text).get("project", {}) if root_text else {}
    entries, issues = [], []
    for path in paths:
        try:
            entry, warnings = _entry(git, path, repository_uri, repo_id, publisher, namespace, root_project)
        except (CatalogError, ValueError, yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
            issues.append({"path": path, "code": "invalid_metadata", "severity": "error", "message": str(exc)[:300]})
            continue
        entries.append(entry)
        issues.extend(warnings)
    snapshot: dict[str, Any] = {
        "schema_version": PROFILE, "publisher": publisher,
        "source": {"provider": "github", "id": repo_id, "uri": repository_uri, "revision": git.revision},
        "generator": {"name": "openenv-git-catalog", "version": "1"},
        "inventory": {"root": root.strip("/") or ".", "paths": paths}, "entries": entries, "issues": issues,
        "complete": not any(i["severity"] == "error" for i in issues),
    }
    snapshot["digest"] = snapshot_digest(snapshot)
    return snapshot


def load_snapshot(path: Path) -> dict[str, Any]:
    """A complete snapshot whose digest matches its content.

    Raises:
        CatalogError: unreadable, not a ``0.1-draft`` snapshot, incomplete, or altered since it was built.
    """
    try:
        snapshot = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise CatalogError(f"cannot read the catalog snapshot {path}: {exc}") from None
    if not isinstance(snapshot, dict) or snapshot.get("schema_version") != PROFILE:
        raise CatalogError(f"{path} is not a catalog snapshot of schema {PROFILE} ('catalog build' writes one)")
    if not snapshot.get("complete"):
        raise CatalogError(f"{path} is incomplete (its build reported errors); fix them and build it again")
    if snapshot_digest(snapshot) != snapshot.get("digest"):
        raise CatalogError(f"{path}'s content does not match its digest; build it again rather than edit it")
    return snapshot


def resolve(snapshot: dict[str, Any], identifier: str) -> dict[str, Any]:
    """The entry with exactly this identifier.

    Raises:
        CatalogError: no such entry.
    """
    for entry in snapshot["entries"]:
        if entry["identifier"] == identifier:
            return entry  # type: ignore[no-any-return]
    raise CatalogError(f"no entry {identifier!r} in the snapshot; 'discover --catalog FILE' lists the identifiers")


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"[^\W_]+", text.casefold()))


def search(snapshot: dict[str, Any], query: str, *, filters: dict[str, str] | None = None,
           limit: int = 20) -> list[tuple[dict[str, Any], int]]:
    """Entries matching the query's words (score: percent of them found), best first, as OpenEnv ranks them.

    Raises:
        CatalogError: an unsupported filter or a limit outside 1..1000.
    """
    if not 1 <= limit <= 1000:
        raise CatalogError("--limit must be between 1 and 1000")
    unknown = set(filters or {}) - _FILTERS
    if unknown:
        raise CatalogError(f"unsupported filter {', '.join(sorted(unknown))}; use {', '.join(sorted(_FILTERS))}")
    wanted = _tokens(query)
    found = []
    for entry in snapshot["entries"]:
        card = entry["data"]
        values = {"provider": [card["source"]["provider"]], "tags": entry["tags"], "type": [entry["type"]]}
        if any(value not in values.get(key, [card.get(key)]) for key, value in (filters or {}).items()):
            continue
        text = " ".join([entry["displayName"], card["description"], *entry["tags"], *entry["capabilities"],
                         *entry["representativeQueries"]])
        shared = wanted & _tokens(text)
        if wanted and not shared:
            continue
        found.append((entry, round(100 * len(shared) / len(wanted)) if wanted else 0))
    return sorted(found, key=lambda pair: (-pair[1], pair[0]["identifier"]))[:limit]
