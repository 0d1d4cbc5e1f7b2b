"""``openenv-train validate [PATH | --url URL]``: check an env folder, or a running env server, and say what to fix.

Local checks follow OpenEnv's ``openenv validate`` (layout, manifest, ``[project.scripts] server``,
``server/app.py`` ``main()``) plus ours: the manifest's ``app`` imports and is an Environment, the models and
client import, and the schemas generate. Runtime checks are OpenEnv's criteria (``/openapi.json``, ``/health``,
``/metadata``, ``/schema``, ``/mcp``, the mode's routes) plus ours over ``/ws``: a reset/step round trip, a
``state`` reply, and the error codes of a bad action and of an unknown message type. ``--level`` and ``--policy``
select OpenEnv's validation (``_validation_run``), with ours beside (``_validate_levels``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import tomllib
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from ._app import app, fail
from ._validate_levels import ours_results, replay_episode, well_formed
from ._validation_policy import LEVELS, level_number, policy_entries
from ._validation_run import LocalServer, UnsupportedFolder, run_validation

__all__ = ["Check", "check_folder", "check_server"]

_LAYOUT = ("openenv.yaml", "__init__.py", "models.py", "client.py", "README.md", "pyproject.toml",
           "server/__init__.py", "server/app.py")


@dataclass
class Check:
    """One criterion: its id, what it means, whether it passed, where it looked and how to fix a failure."""

    id: str
    description: str
    passed: bool
    where: str
    fix: str = ""
    details: str = ""


class _Checks(list[Check]):
    def add(self, id: str, description: str, passed: bool, where: str, fix: str = "", details: str = "") -> bool:
        self.append(Check(id, description, passed, where, "" if passed else fix, "" if passed else details))
        return passed


# -- local ---------------------------------------------------------------------------------------
def _manifest(folder: Path, checks: _Checks) -> dict[str, Any] | None:
    where = str(folder / "openenv.yaml")
    try:
        data = yaml.safe_load((folder / "openenv.yaml").read_text())
    except (OSError, yaml.YAMLError) as exc:
        checks.add("manifest", "openenv.yaml parses", False, where, "write openenv.yaml ('openenv-train init' makes one)",
                   str(exc).splitlines()[0])
        return None
    if not isinstance(data, dict):
        checks.add("manifest", "openenv.yaml parses", False, where, "make openenv.yaml a mapping of fields")
        return None
    problems = []
    if data.get("spec_version") != 1:
        problems.append(f"spec_version must be 1, got {data.get('spec_version')!r}")
    name = data.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        problems.append(f"name must be the package's snake_case name, got {name!r}")
    if data.get("type") != "space":
        problems.append(f"type must be 'space', got {data.get('type')!r}")
    if not isinstance(data.get("runtime"), str):
        problems.append("runtime is missing (openenv-train or fastapi)")
    if not isinstance(data.get("app"), str) or ":" not in data["app"]:
        problems.append(f"app must be 'module:attribute' such as 'server.app:app', got {data.get('app')!r}")
    port = data.get("port")
    if not isinstance(port, int) or not 0 < port < 65536:
        problems.append(f"port must be a TCP port number, got {port!r}")
    checks.add("manifest", "openenv.yaml has spec_version, name, type, runtime, app, port", not problems, where,
               "fix these fields as in 'openenv-train init' (spec_version: 1, type: space, app: server.app:app, "
               "port: 8000)", "; ".join(problems))
    return data if not problems else None


def _has_main_guard(source: str) -> bool:
    """``main()`` is called under ``if __name__ == "__main__":`` (what OpenEnv's validate looks for)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            calls = [n for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Call)]
            if any(isinstance(c.func, ast.Name) and c.func.id == "main" for c in calls):
                return True
    return False


def _project(folder: Path, name: str, checks: _Checks) -> None:
    where = str(folder / "pyproject.toml")
    try:
        project = tomllib.loads((folder / "pyproject.toml").read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        checks.add("pyproject", "pyproject.toml parses", False, where, "fix its TOML", str(exc))
        return
    server = project.get("scripts", {}).get("server", "")
    checks.add("entry_point", "[project.scripts] server = '<package>.server.app:main'", server.endswith(":main"), where,
               f"add [project.scripts] server = \"{name}.server.app:main\"", f"got {server!r}")
    deps = [str(d).lower() for d in project.get("dependencies", [])]
    checks.add("dependencies", "depends on openenv-train (or openenv-core)", any(d.startswith("openenv") for d in deps),
               where, "add \"openenv-train>=0.1\" to [project] dependencies", f"dependencies: {deps}")
    app_py = folder / "server" / "app.py"
    source = app_py.read_text() if app_py.is_file() else ""
    checks.add("server_main", "server/app.py defines main() and calls it under if __name__ == '__main__'",
               "def main(" in source and _has_main_guard(source), str(app_py),
               "define main() that serves the env and end the file with: if __name__ == \"__main__\": main()")


def _imports(folder: Path, manifest: dict[str, Any], checks: _Checks) -> None:
    from ..client import EnvClient, import_folder_package
    from ..core import Action, Observation
    from ..server import Environment

    name = manifest["name"]
    try:
        import_folder_package(folder, name)
    except Exception as exc:
        checks.add("package_import", f"the folder imports as package {name!r}", False, str(folder / "__init__.py"),
                   "fix the import error (is openenv-train installed? do relative imports match the layout?)",
                   f"{type(exc).__name__}: {exc}")
        return
    checks.add("package_import", f"the folder imports as package {name!r}", True, str(folder / "__init__.py"))
    module_path, _, attr = manifest["app"].partition(":")
    target = f"{name}.{module_path}"
    try:
        env_cls = getattr(importlib.import_module(target), attr)
    except Exception as exc:
        checks.add("app_import", f"manifest app {manifest['app']!r} imports", False, str(folder / module_path.replace(".", "/"))
                   + ".py", f"define {attr} in {module_path} (the Environment class to serve)", f"{type(exc).__name__}: {exc}")
        return
    is_env = isinstance(env_cls, type) and issubclass(env_cls, Environment)
    checks.add("app_class", f"{target}:{attr} is an openenv_train.server.Environment subclass", is_env,
               str(folder / "server" / "app.py"),
               "set app = YourEnvironment (an openenv_train.server.Environment subclass); an OpenEnv (openenv-core) env "
               "folder is served through an adapter: run 'openenv-train import FOLDER'", f"got {env_cls!r}")
    if is_env:
        try:
            json.dumps(env_cls.spec_info().schema())
            checks.add("schemas", "action, observation and state JSON schemas generate", True, f"{target}:{attr}")
        except Exception as exc:
            checks.add("schemas", "action, observation and state JSON schemas generate", False, f"{target}:{attr}",
                       "make action_type/observation_type/state_type pydantic models with JSON-serialisable fields",
                       f"{type(exc).__name__}: {exc}")
    found = {"models": (Action, Observation), "client": (EnvClient,)}
    for module_name, bases in found.items():
        where = str(folder / f"{module_name}.py")
        try:
            module = importlib.import_module(f"{name}.{module_name}")
        except Exception as exc:
            checks.add(f"{module_name}_import", f"{module_name}.py imports", False, where, "fix the import error",
                       f"{type(exc).__name__}: {exc}")
            continue
        missing = [b.__name__ for b in bases
                   if not any(isinstance(v, type) and issubclass(v, b) and v is not b for v in vars(module).values())]
        checks.add(f"{module_name}_classes", f"{module_name}.py defines {' and '.join(b.__name__ for b in bases)} subclasses",
                   not missing, where, f"define a subclass of {', '.join(missing)} in {module_name}.py")


def check_folder(folder: Path) -> list[Check]:
    """Every local check of the env folder ``folder``, in order; later checks are skipped when earlier ones fail."""
    checks = _Checks()
    missing = [f for f in _LAYOUT if not (folder / f).is_file()]
    if not ((folder / "server" / "Dockerfile").is_file() or (folder / "Dockerfile").is_file()):
        missing.append("server/Dockerfile (or Dockerfile)")
    checks.add("layout", "OpenEnv layout: " + ", ".join(_LAYOUT) + ", server/Dockerfile", not missing, str(folder),
               "create the missing files ('openenv-train init NAME' writes a complete example)",
               f"missing: {', '.join(missing)}")
    if not (folder / "openenv.yaml").is_file():
        return list(checks)
    manifest = _manifest(folder, checks)
    if (folder / "pyproject.toml").is_file():
        _project(folder, manifest["name"] if manifest else folder.name, checks)
    if manifest is not None and not missing:
        _imports(folder, manifest, checks)
    return list(checks)


# -- runtime -------------------------------------------------------------------------------------
def _http(url: str, body: Any = None, timeout_s: float = 5.0, *, soft: bool = False) -> tuple[int, Any]:
    """Status and JSON body (None if not JSON); ``soft``: a request that gets no answer is status 0, not an error."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            status, raw = reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (OSError, ValueError):
        if not soft:
            raise
        return 0, None
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None


def _http_checks(base: str, checks: _Checks, timeout_s: float) -> dict[str, Any]:
    """OpenEnv's runtime criteria; returns the /schema document (empty when it failed)."""
    fix_route = "serve the env with openenv-train (or OpenEnv's create_app), which provides this route"
    status, doc = _http(f"{base}/openapi.json", timeout_s=timeout_s, soft=True)
    paths = doc.get("paths", {}) if isinstance(doc, dict) else {}
    checks.add("openapi_version_available", "GET /openapi.json returns info.version",
               status == 200 and isinstance(doc, dict) and isinstance(doc.get("info", {}).get("version"), str),
               f"{base}/openapi.json", fix_route, f"HTTP {status}")
    status, doc = _http(f"{base}/health", timeout_s=timeout_s, soft=True)
    checks.add("health_endpoint", "GET /health returns {'status': 'healthy'}",
               status == 200 and isinstance(doc, dict) and doc.get("status") == "healthy", f"{base}/health", fix_route,
               f"HTTP {status}: {doc}")
    status, doc = _http(f"{base}/metadata", timeout_s=timeout_s, soft=True)
    checks.add("metadata_endpoint", "GET /metadata returns name and description",
               status == 200 and isinstance(doc, dict) and all(isinstance(doc.get(k), str) for k in ("name", "description")),
               f"{base}/metadata", "give the Environment a name and a docstring", f"HTTP {status}")
    status, schema = _http(f"{base}/schema", timeout_s=timeout_s, soft=True)
    ok = status == 200 and isinstance(schema, dict) and all(isinstance(schema.get(k), dict)
                                                             for k in ("action", "observation", "state"))
    checks.add("schema_endpoint", "GET /schema returns action, observation and state schemas", ok, f"{base}/schema",
               "make action_type/observation_type/state_type pydantic models", f"HTTP {status}")
    status, doc = _http(f"{base}/mcp", body={}, timeout_s=timeout_s, soft=True)
    checks.add("mcp_endpoint", "POST /mcp answers JSON-RPC 2.0",
               status == 200 and isinstance(doc, dict) and doc.get("jsonrpc") == "2.0", f"{base}/mcp", fix_route,
               f"HTTP {status}")
    routes = {p: p in paths for p in ("/reset", "/step", "/state")}
    checks.add("mode_endpoint_consistency", "OpenAPI lists all or none of /reset, /step, /state",
               bool(paths) and len(set(routes.values())) == 1, f"{base}/openapi.json", fix_route, f"routes: {routes}")
    return schema if ok else {}


def _ws_checks(base: str, schema: dict[str, Any], checks: _Checks, timeout_s: float) -> None:
    from websockets.sync.client import connect

    from ..recipes.collect import random_action

    url = base.replace("http://", "ws://", 1).replace("https://", "wss://", 1) + "/ws"

    def ask(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
        ws.send(json.dumps(message))
        reply = json.loads(ws.recv(timeout=timeout_s))
        return reply if isinstance(reply, dict) else {}

    try:
        with connect(url, open_timeout=timeout_s, close_timeout=timeout_s, max_size=2**24) as ws:
            reset = ask(ws, {"type": "reset", "data": {"seed": 0}})
            action = random_action(schema.get("action", {}), seed=0) if schema else {}
            step = ask(ws, {"type": "step", "data": action})
            trip = [r.get("type") for r in (reset, step)] == ["observation", "observation"] and all(
                {"observation", "reward", "done"} <= set(r.get("data", {})) for r in (reset, step))
            checks.add("ws_reset_step", "/ws reset then step each answer an observation {observation, reward, done}", trip,
                       url, "reset and step must return Observation instances", f"step {action} -> {step}"[:400])
            state = ask(ws, {"type": "state"})
            checks.add("ws_state", "/ws state answers {episode_id, step_count}",
                       state.get("type") == "state" and "step_count" in state.get("data", {}), url,
                       "the state property must return a State", f"got {state}"[:300])
            bad = ask(ws, {"type": "step", "data": {"__not_a_field__": 1}})
            checks.add("ws_bad_action", "/ws step with a bad action answers error VALIDATION_ERROR, session open",
                       bad.get("type") == "error" and bad.get("data", {}).get("code") == "VALIDATION_ERROR", url,
                       "validate actions against action_type (forbid unknown fields) and reply VALIDATION_ERROR",
                       f"got {bad}"[:300])
            unknown = ask(ws, {"type": "no_such_type"})
            checks.add("ws_unknown_type", "/ws unknown message type answers error UNKNOWN_TYPE, session open",
                       unknown.get("type") == "error" and unknown.get("data", {}).get("code") == "UNKNOWN_TYPE", url,
                       "reply UNKNOWN_TYPE to an unknown message type and keep the session", f"got {unknown}"[:300])
    except Exception as exc:
        checks.add("ws_session", "/ws accepts a session and answers each message", False, url,
                   "serve the env with 'openenv-train serve' (WebSocket /ws) and check the server log",
                   f"{type(exc).__name__}: {exc}")


def check_server(url: str, *, timeout_s: float = 5.0) -> list[Check]:
    """Every runtime check of the env server at ``url`` (``http(s)://host:port[/prefix]``)."""
    base = url.rstrip("/") if "://" in url else f"http://{url.rstrip('/')}"
    checks = _Checks()
    try:
        _http(f"{base}/health", timeout_s=timeout_s)
    except (OSError, ValueError) as exc:
        checks.add("reachable", "the server answers HTTP", False, base,
                   "start it (openenv-train serve ENV --port PORT) and check the URL", f"{type(exc).__name__}: {exc}")
        return list(checks)
    schema = _http_checks(base, checks, timeout_s)
    _ws_checks(base, schema, checks, timeout_s)
    return list(checks)


def _semantic_checks(base: str, checks: _Checks, timeout_s: float) -> None:
    """Our semantic checks: two seeded episodes of the same actions replay alike; their rewards are finite or null."""
    from ..recipes.collect import random_action

    _, schema = _http(f"{base}/schema", timeout_s=timeout_s, soft=True)
    action_schema = schema.get("action", {}) if isinstance(schema, dict) else {}
    actions = [random_action(action_schema, seed=i) for i in range(5)]
    url = base.replace("http://", "ws://", 1).replace("https://", "wss://", 1) + "/ws"
    try:
        first, second = (replay_episode(url, actions, seed=0, timeout_s=timeout_s) for _ in range(2))
    except Exception as exc:
        checks.add("replayability", "two /ws episodes of seed 0 and the same actions run", False, url,
                   "serve the env and check the server log", f"{type(exc).__name__}: {exc}")
        return
    diverged = next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), None)
    if diverged is None and len(first) != len(second):
        diverged = min(len(first), len(second))
    checks.add("replayability", "two episodes of seed 0 and the same actions give the same observations, rewards "
               "and done flags", diverged is None, url,
               "derive every random choice from reset's seed (random.Random(seed)), not from global state or the clock",
               "" if diverged is None else f"they differ at frame {diverged}: "
               f"{first[diverged] if diverged < len(first) else None} vs "
               f"{second[diverged] if diverged < len(second) else None}"[:400])
    bad = [reward for _, reward, _ in first if not well_formed(reward)]
    checks.add("reward_finite", "every reward is a finite number or null", not bad, url,
               "return float rewards (never NaN, infinity, strings or booleans)", f"rewards: {bad}"[:300])


def _ours_on_folder(folder: Path, level: int, server: LocalServer, timeout_s: float) -> list[Check]:
    """Our checks of the folder up to ``level``: the static ones, then (if those pass) its started server's."""
    checks = _Checks(check_folder(folder))
    if level == 1 or not all(c.passed for c in checks if c.id != "layout"):
        return list(checks)
    url = server.start()
    if checks.add("startup", "'openenv-train serve' starts the folder's env and listens", url is not None, str(folder),
                  "run 'openenv-train serve .' in the folder and fix what its log says", server.error):
        assert url is not None
        checks.extend(check_server(url, timeout_s=timeout_s))
        if level == 3:
            _semantic_checks(url.rstrip("/"), checks, timeout_s)
    return list(checks)


def _url_report(url: str, level: int, timeout_s: float) -> dict[str, Any]:
    """OpenEnv's ``validate --url`` report (its six criteria decide ``passed``), with our ``/ws`` checks beside."""
    base = url.rstrip("/") if "://" in url else f"http://{url.rstrip('/')}"
    criteria = _Checks()
    _http_checks(base, criteria, timeout_s)
    _, doc = _http(f"{base}/openapi.json", timeout_s=timeout_s, soft=True)
    version = doc.get("info", {}).get("version") if isinstance(doc, dict) else None
    paths = doc.get("paths", {}) if isinstance(doc, dict) else {}
    ours = _Checks()
    if any(c.passed for c in criteria):  # it answers: drive a session too
        schema = _http(f"{base}/schema", timeout_s=timeout_s, soft=True)[1]
        _ws_checks(base, schema if isinstance(schema, dict) else {}, ours, timeout_s)
        if level == 3:
            _semantic_checks(base, ours, timeout_s)
    rows = [{"id": c.id, "description": c.description, "passed": c.passed, "required": True,
             **({"details": c.details} if c.details else {})} for c in criteria]
    return {"target": base, "validation_type": "running_environment",
            "standard_version": version if isinstance(version, str) else "unknown",
            "standard_profile": "openenv-http/1.x" if isinstance(version, str) and version.startswith("1.")
            else "openenv-http/unknown",
            "mode": ("simulation" if "/reset" in paths else "production") if paths else "unknown",
            "passed": all(c.passed for c in criteria),
            "summary": {"passed_count": sum(c.passed for c in criteria), "total_count": len(criteria),
                        "failed_criteria": [c.id for c in criteria if not c.passed]},
            "criteria": rows, "ours": ours_results(list(ours))}


# -- command -------------------------------------------------------------------------------------
def _print(checks: list[Check]) -> None:
    for check in checks:
        if check.passed:
            typer.echo(f"PASS {check.id}: {check.description}")
        else:
            typer.echo(f"FAIL {check.id}: {check.description}\n     at: {check.where}"
                       + (f"\n     got: {check.details}" if check.details else "") + f"\n     fix: {check.fix}")


def _print_report(report: dict[str, Any]) -> None:
    """OpenEnv's text rendering of a level report, then ours."""
    if "results" in report:
        names = ", ".join(LEVELS[n - 1] for n in report["levels_run"])
        typer.echo(f"Validation report for {report['target']} (signature: {report['signature']})\n"
                   f"  policy {report['policy_version']} · levels run: {names}")
        rows = report["results"]
    else:
        typer.echo(f"Validation report for {report['target']} (profile: {report['standard_profile']})\n"
                   f"  standard version: {report['standard_version']} · mode: {report['mode']}")
        rows = [{"check_id": c["id"], "status": "pass" if c["passed"] else "fail",
                 "evidence": [c["details"]] if c.get("details") else []} for c in report["criteria"]]
    for result in rows:
        typer.echo(f"  {result['status'].upper():5s} {result['check_id']}")
        if result["status"] != "pass":
            for line in result.get("evidence") or []:
                typer.echo(f"          {line}")
            if result.get("remediation"):
                typer.echo(f"          remediation: {result['remediation']}")
    verdict = report.get("verdict") or ("pass" if report["passed"] else "fail")
    typer.echo(f"Verdict: {verdict.upper()}")
    if report["ours"]:
        failed = [r for r in report["ours"] if r["status"] != "pass"]
        typer.echo(f"openenv-train's own checks (not in the verdict): {len(report['ours']) - len(failed)}/"
                   f"{len(report['ours'])} passed")
        for result in failed:
            typer.echo(f"  FAIL  {result['check_id']}\n" + "".join(f"          {line}\n" for line in result["evidence"])
                       + (f"          fix: {result['remediation']}" if result["remediation"] else ""))


def _level_report(folder: Path | None, url: str | None, level: str | None, policy: str | None, timeout_s: float,
                  skip_build: bool) -> tuple[dict[str, Any], bool]:
    """OpenEnv's validation of a folder or URL at ``level`` under ``policy``, with ours beside; and whether it
    passes (OpenEnv's exit status: a PASS or WARN verdict)."""
    top = level_number(level or "semantic")
    if url is not None:
        report = _url_report(url, top, timeout_s)
        return report, bool(report["passed"])
    assert folder is not None
    server = LocalServer(folder, timeout_s)
    try:
        report = run_validation(folder, level=top, policy=policy, server=server, skip_build=skip_build)
        report["ours"] = ours_results(_ours_on_folder(folder, top, server, timeout_s))
    finally:
        server.stop()
    return report, report["verdict"] != "fail"


@app.command()
def validate(
    path: Annotated[str | None, typer.Argument(help="Env folder (default: the current one), or an http(s):// URL.")] = None,
    url: Annotated[str | None, typer.Option(help="Check a running server instead, e.g. http://127.0.0.1:8000.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print a machine-readable JSON report.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each reply of a running server.")] = 5.0,
    level: Annotated[str | None, typer.Option(help=f"OpenEnv's validation level ceiling: {', '.join(LEVELS)} (runtime "
                                                   "starts the folder's server and grades one episode of its "
                                                   "validation.execution runtime plan; semantic adds OpenEnv's "
                                                   "contract graders). Selects OpenEnv's validation; default "
                                                   "(neither --level nor --policy): our folder or server checks.")] = None,
    policy: Annotated[str | None, typer.Option(help="OpenEnv's severity policy version (v1, v2): which failed checks "
                                                    "fail the verdict and which warn. Default: v1 at --level static, "
                                                    "v2 above (v1 has no runtime checks). Alone, it validates at "
                                                    "OpenEnv's default level, semantic.")] = None,
    skip_build: Annotated[bool, typer.Option(help="With --level runtime or semantic: do not start the folder's "
                                                  "server; the runtime checks are SKIPped, as OpenEnv's --skip-build.")]
    = False,
) -> None:
    """Check an env folder (layout, manifest, entry points, classes, schemas) or a running server (HTTP + /ws).

    Each failed check names the file or endpoint and the fix. With --level or --policy it is OpenEnv's validation
    (its check ids, severities and verdict), our checks listed beside as ours.* (not in the verdict).

    Exit status 0 when every check passes (with --level/--policy: a PASS or WARN verdict), 1 when one fails,
    2 for bad usage (or a folder that is not an env package).
    """
    if path is not None and path.startswith(("http://", "https://")):
        if url is not None and url != path:
            raise fail("give the server URL once: as PATH or as --url", code=2)
        path, url = None, path
    if url is not None and path is not None:
        raise fail("give a folder or --url, not both", code=2)
    levels_mode = level is not None or policy is not None
    try:
        if levels_mode:  # OpenEnv's --url ignores the policy: only its name is checked there
            policy_entries(policy, level_number(level or "semantic") if url is None else 1)
    except ValueError as exc:
        raise fail(str(exc), code=2) from None
    if url is not None and level is not None and level.lower() == "static":
        raise fail("--level static reads an env folder; check a running server at --level runtime or semantic",
                   code=2)
    folder = None if url is not None else Path(path or ".").resolve()
    if folder is not None and not folder.is_dir():
        raise fail(f"{folder} is not a folder; give an env folder (with openenv.yaml) or --url", code=2)
    if levels_mode:
        try:
            report, passed = _level_report(folder, url, level, policy, timeout, skip_build)
        except UnsupportedFolder as exc:
            raise fail(str(exc), code=2) from None
        if json_output:
            typer.echo(json.dumps(report, indent=2))
        else:
            _print_report(report)
        raise typer.Exit(0 if passed else 1)
    if url is not None:
        target, kind = url, "running_environment"
        checks = check_server(url, timeout_s=timeout)
    else:
        assert folder is not None
        target, kind = str(folder), "local_environment"
        checks = check_folder(folder)
    passed = all(c.passed for c in checks)
    if json_output:
        report = {"target": target, "validation_type": kind, "passed": passed,
                  "summary": {"passed_count": sum(c.passed for c in checks), "total_count": len(checks),
                              "failed_criteria": [c.id for c in checks if not c.passed]},
                  "criteria": [asdict(c) for c in checks]}
        typer.echo(json.dumps(report, indent=2))
    else:
        _print(checks)
        typer.echo(f"{'passed' if passed else 'FAILED'}: {sum(c.passed for c in checks)}/{len(checks)} checks on {target}")
    raise typer.Exit(0 if passed else 1)
