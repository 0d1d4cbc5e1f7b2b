"""``openenv-train push [PATH]``: stage an env folder as a Docker Space and upload it to the Hugging Face Hub.

The staged folder is the env's Docker build context (``openenv-train build``'s: Dockerfile, openenv-train's
source, requirements, the env package under ``app/``) plus ``openenv.yaml`` and a README whose front matter
makes it a Docker Space (``sdk: docker``, ``app_port``).
"""

from __future__ import annotations

import importlib
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from ._app import app, err, fail

__all__ = ["parse_kv_pairs", "space_readme", "stage"]

_IGNORE = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist", ".venv", ".git", ".pytest_cache",
                                 ".mypy_cache", ".ruff_cache")


def space_readme(readme: str, name: str, port: int) -> str:
    """``readme`` with Space front matter: ``sdk: docker`` and ``app_port`` set, other keys kept.

    Example:
        >>> space_readme("# Hi", "my_env", 8000).splitlines()[:3]
        ['---', 'title: My Env', 'sdk: docker']
    """
    front: dict[str, Any] = {}
    body = readme
    if readme.startswith("---\n") and "\n---" in readme[4:]:
        head, _, body = readme[4:].partition("\n---")
        body = body.lstrip("-").lstrip("\n")
        loaded = yaml.safe_load(head)
        front = loaded if isinstance(loaded, dict) else {}
    front = {"title": front.get("title") or name.replace("_", " ").title(), **front, "sdk": "docker", "app_port": port}
    tags = list(front.get("tags") or [])
    front["tags"] = tags + [t for t in ("openenv", "openenv-train") if t not in tags]
    return "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n\n" + body


def _manifest(folder: Path) -> dict[str, Any]:
    try:
        manifest = yaml.safe_load((folder / "openenv.yaml").read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{folder / 'openenv.yaml'}: {exc}; push needs an env folder ('openenv-train init' makes one)") from None
    if not isinstance(manifest, dict) or not str(manifest.get("name", "")).isidentifier():
        raise ValueError(f"{folder / 'openenv.yaml'} needs a snake_case 'name'; run 'openenv-train validate {folder}'")
    return manifest


def _extra_requirements(folder: Path) -> list[str]:
    """The env's own dependencies (its pyproject's, less openenv-train/openenv-core which the image has)."""
    try:
        deps = tomllib.loads((folder / "pyproject.toml").read_text()).get("project", {}).get("dependencies", [])
    except (OSError, tomllib.TOMLDecodeError):
        return []
    return [d for d in deps if not str(d).lower().startswith(("openenv-train", "openenv-core", "openenv["))]


def stage(folder: Path, out: Path) -> Path:
    """Write the Space folder of the env at ``folder`` into ``out`` (replaced); returns ``out``.

    Raises:
        ValueError: not an env folder. EnvLoadError: its app does not import.
    """
    from ..containers import write_context

    folder = folder.resolve()
    manifest = _manifest(folder)
    name, port = manifest["name"], int(manifest.get("port", 8000))
    module, _, attr = str(manifest.get("app", "server.app:app")).partition(":")
    packages = Path(tempfile.mkdtemp(prefix="openenv-train-push-"))
    try:  # the env imports as package NAME whatever its folder is called
        shutil.copytree(folder, packages / name, ignore=_IGNORE)
        for key in [k for k in sys.modules if k == name or k.startswith(f"{name}.")]:
            del sys.modules[key]  # an earlier import of NAME (another copy) must not answer for this one
        importlib.invalidate_caches()
        sys.path.insert(0, str(packages))
        write_context(f"{name}.{module}:{attr}", out)
    finally:
        if str(packages) in sys.path:
            sys.path.remove(str(packages))
        shutil.rmtree(packages, ignore_errors=True)
    with (out / "requirements.txt").open("a") as file:
        file.writelines(f"{req}\n" for req in _extra_requirements(folder))
    dockerfile = out / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace('"--port", "8000"', f'"--port", "{port}"')
                          .replace("EXPOSE 8000", f"EXPOSE {port}"))
    readme = (folder / "README.md").read_text() if (folder / "README.md").is_file() else f"# {name}\n"
    (out / "README.md").write_text(space_readme(readme, name, port))
    shutil.copy2(folder / "openenv.yaml", out / "openenv.yaml")
    return out


def _tree(root: Path) -> list[str]:
    """The staged files, with openenv-train's vendored source summarised as one line."""
    lines = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[:1] == ("src",):
            if relative == Path("src/openenv_train"):
                count = sum(1 for p in path.rglob("*") if p.is_file())
                lines.append(f"src/openenv_train/  ({count} files: openenv-train's source)")
            continue
        if path.is_file():
            lines.append(str(relative))
    return lines


def parse_kv_pairs(pairs: list[str], *, flag: str, secret: bool = False) -> dict[str, str]:
    """``KEY=VALUE`` options as a dict (split at the first ``=``; later keys win).

    Raises:
        ValueError: an entry without ``=`` or with an empty key (a secret's value is never shown).
    """
    parsed: dict[str, str] = {}
    for entry in pairs:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            shown = "<redacted>" if secret else repr(entry)
            raise ValueError(f"{flag} takes KEY=VALUE, got {shown}")
        parsed[key.strip()] = value
    return parsed


def _docker_push(staged: Path, tag: str) -> None:
    """Build the staged Space folder as image ``tag`` and push it (the registry is the boundary tests replace)."""
    from ..containers import docker_available, docker_command

    missing = docker_available()
    if missing:
        raise fail(f"--registry builds and pushes a Docker image, but {missing}; install Docker or push to a Space")
    for args, timeout_s in ((["build", "-t", tag, str(staged)], 3600.0), (["push", tag], 3600.0)):
        done = docker_command(args, timeout_s=timeout_s)
        if done.returncode != 0:
            raise fail(f"docker {args[0]} {tag} failed: {(done.stderr or done.stdout).strip()[-400:]}; check "
                       "'docker login' for the registry")


def _hf_api(token: str) -> Any:
    """The Hub client (the one boundary tests replace)."""
    from huggingface_hub import HfApi

    return HfApi(token=token)


@dataclass(frozen=True)
class SpaceSettings:
    """What ``push`` sets on the Space besides its files."""

    hardware: str | None = None
    variables: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict, repr=False)
    create_pr: bool = False


def _upload(staged: Path, repo_id: str | None, name: str, private: bool, token: str,
            settings: SpaceSettings = SpaceSettings()) -> tuple[str, str | None]:
    """Create the Space and upload the folder; returns the repo id and the pull request's URL (``--create-pr``)."""
    api = _hf_api(token)
    pr_url = None
    try:
        if repo_id is None:
            repo_id = f"{api.whoami()['name']}/{name}"
        create: dict[str, Any] = {"repo_id": repo_id, "repo_type": "space", "space_sdk": "docker",
                                  "private": private, "exist_ok": True}
        if settings.hardware is not None:
            create["space_hardware"] = settings.hardware
        api.create_repo(**create)
        upload: dict[str, Any] = {"folder_path": str(staged), "repo_id": repo_id, "repo_type": "space",
                                  "commit_message": f"openenv-train push of {name}"}
        if settings.create_pr:
            upload["create_pr"] = True
        result = api.upload_folder(**upload)
        pr_url = getattr(result, "pr_url", None) if settings.create_pr else None
        for key, value in settings.variables.items():
            api.add_space_variable(repo_id=repo_id, key=key, value=value)
        for key, value in settings.secrets.items():
            api.add_space_secret(repo_id=repo_id, key=key, value=value)
    except Exception as exc:  # the Hub client raises requests/httpx/hub errors alike
        target = repo_id or "your namespace"
        message = str(exc)
        for value in settings.secrets.values():  # a Hub error must not echo a secret
            message = message.replace(value, "<redacted>") if value else message
        raise fail(f"upload to the Hub Space {target} failed ({type(exc).__name__}: {message[:300]}); check the "
                   "network, that the token may write there (huggingface-cli login), and --repo-id") from None
    return repo_id, pr_url


@app.command()
def push(
    path: Annotated[Path, typer.Argument(help="Env folder (with openenv.yaml).")] = Path("."),
    repo_id: Annotated[str | None, typer.Option(help="Space to create or update, USER/NAME (default: "
                                                     "your user / the env's name).")] = None,
    private: Annotated[bool, typer.Option(help="Create the Space private.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Stage and show the files; upload nothing.")] = False,
    stage_dir: Annotated[Path | None, typer.Option(help="Stage here and keep it (default: a temporary folder).")] = None,
    registry: Annotated[str | None, typer.Option(help="Build the staged folder as image REGISTRY/NAME and push it to "
                                                      "this Docker registry (e.g. ghcr.io/me) instead of a Space.")] = None,
    hardware: Annotated[str | None, typer.Option(help="Space hardware to request (cpu-basic, t4-medium, ...).")] = None,
    env_var: Annotated[list[str] | None, typer.Option(help="Space variable KEY=VALUE (repeatable; over openenv.yaml's "
                                                           "'variables').")] = None,
    secret: Annotated[list[str] | None, typer.Option(help="Space secret KEY=VALUE (repeatable; the value is never "
                                                          "printed).")] = None,
    create_pr: Annotated[bool, typer.Option("--create-pr", help="Upload as a pull request on the Space instead of "
                                                                "a commit to main.")] = False,
) -> None:
    """Upload an env folder as a Docker Space: create_repo(space_sdk='docker') then upload_folder.

    Needs a Hugging Face token (HF_TOKEN or 'huggingface-cli login') unless --dry-run or --registry.
    """
    from huggingface_hub import get_token

    from ..core import EnvLoadError

    if not (path / "openenv.yaml").is_file():
        raise fail(f"{path} has no openenv.yaml; push an env folder ('openenv-train init NAME' makes one)", code=2)
    settings = _settings(path, hardware, env_var or [], secret or [], create_pr, registry)
    if registry is not None:
        _push_image(path, registry, stage_dir, dry_run)
        return
    token = None if dry_run else get_token()
    if not dry_run and not token:
        raise fail("no Hugging Face token: run 'huggingface-cli login' or set HF_TOKEN (or use --dry-run to only stage)")
    out = stage_dir or Path(tempfile.mkdtemp(prefix="openenv-train-space-")) / "space"
    try:
        staged = stage(path, out)
    except (ValueError, EnvLoadError, FileNotFoundError) as exc:
        raise fail(str(exc)) from None
    name = _manifest(path)["name"]
    if dry_run:
        typer.echo(f"staged Space for {name} in {staged} (sdk: docker); would upload to {repo_id or f'<user>/{name}'}:")
        for line in _tree(staged):
            typer.echo(f"  {line}")
        return
    assert token is not None
    try:
        repo, pr_url = _upload(staged, repo_id, name, private, token, settings)
    finally:
        if stage_dir is None:
            shutil.rmtree(out.parent, ignore_errors=True)
    err.print(f"pushed {name}" + (f" as a pull request: {pr_url}" if pr_url else ""))
    if settings.variables or settings.secrets:
        err.print(f"set variables {sorted(settings.variables)} and secrets {sorted(settings.secrets)} on {repo}")
    typer.echo(f"https://huggingface.co/spaces/{repo}")


def _settings(path: Path, hardware: str | None, env_vars: list[str], secrets: list[str], create_pr: bool,
              registry: str | None) -> SpaceSettings:
    """The Space settings of the options (variables: openenv.yaml's, then --env-var), refused where they cannot apply."""
    if (env_vars or secrets) and (registry or create_pr):
        raise fail("--env-var and --secret set a live Space's settings; they do not combine with "
                   f"{'--registry' if registry else '--create-pr'} (set them after the merge, or on the Space)", code=2)
    if registry and (hardware or create_pr):
        raise fail("--hardware and --create-pr are Space options; --registry pushes a Docker image", code=2)
    try:
        variables = {str(k): str(v) for k, v in ((_manifest(path).get("variables") or {}).items())}
        variables.update(parse_kv_pairs(env_vars, flag="--env-var"))
        secret_values = parse_kv_pairs(secrets, flag="--secret", secret=True)
    except (ValueError, AttributeError) as exc:
        raise fail(f"{exc}" if isinstance(exc, ValueError) else "openenv.yaml 'variables' must be a mapping of "
                   "KEY: value", code=2) from None
    return SpaceSettings(hardware, {} if registry or create_pr else variables, secret_values, create_pr)


def _push_image(path: Path, registry: str, stage_dir: Path | None, dry_run: bool) -> None:
    """``--registry``: stage the Space folder and push it as a Docker image."""
    from ..core import EnvLoadError

    name = _manifest(path)["name"]
    tag = f"{registry.rstrip('/')}/{name}"
    out = stage_dir or Path(tempfile.mkdtemp(prefix="openenv-train-image-")) / "context"
    try:
        try:
            stage(path, out)
        except (ValueError, EnvLoadError, FileNotFoundError) as exc:
            raise fail(str(exc)) from None
        if dry_run:
            typer.echo(f"staged {name} in {out}; would build and push {tag}")
            return
        _docker_push(out, tag)
    finally:
        if stage_dir is None:
            shutil.rmtree(out.parent, ignore_errors=True)
    err.print(f"pushed {name}")
    typer.echo(tag)
