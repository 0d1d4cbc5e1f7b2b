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
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from ._app import app, err, fail

__all__ = ["space_readme", "stage"]

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


def _hf_api(token: str) -> Any:
    """The Hub client (the one boundary tests replace)."""
    from huggingface_hub import HfApi

    return HfApi(token=token)


def _upload(staged: Path, repo_id: str | None, name: str, private: bool, token: str) -> str:
    api = _hf_api(token)
    try:
        if repo_id is None:
            repo_id = f"{api.whoami()['name']}/{name}"
        api.create_repo(repo_id=repo_id, repo_type="space", space_sdk="docker", private=private, exist_ok=True)
        api.upload_folder(folder_path=str(staged), repo_id=repo_id, repo_type="space",
                          commit_message=f"openenv-train push of {name}")
    except Exception as exc:  # the Hub client raises requests/httpx/hub errors alike
        target = repo_id or "your namespace"
        raise fail(f"upload to the Hub Space {target} failed ({type(exc).__name__}: {str(exc)[:300]}); check the "
                   "network, that the token may write there (huggingface-cli login), and --repo-id") from None
    return repo_id


@app.command()
def push(
    path: Annotated[Path, typer.Argument(help="Env folder (with openenv.yaml).")] = Path("."),
    repo_id: Annotated[str | None, typer.Option(help="Space to create or update, USER/NAME (default: "
                                                     "your user / the env's name).")] = None,
    private: Annotated[bool, typer.Option(help="Create the Space private.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Stage and show the files; upload nothing.")] = False,
    stage_dir: Annotated[Path | None, typer.Option(help="Stage here and keep it (default: a temporary folder).")] = None,
) -> None:
    """Upload an env folder as a Docker Space: create_repo(space_sdk='docker') then upload_folder.

    Needs a Hugging Face token (HF_TOKEN or 'huggingface-cli login') unless --dry-run.
    """
    from huggingface_hub import get_token

    from ..core import EnvLoadError

    if not (path / "openenv.yaml").is_file():
        raise fail(f"{path} has no openenv.yaml; push an env folder ('openenv-train init NAME' makes one)", code=2)
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
        repo = _upload(staged, repo_id, name, private, token)
    finally:
        if stage_dir is None:
            shutil.rmtree(out.parent, ignore_errors=True)
    err.print(f"pushed {name}")
    typer.echo(f"https://huggingface.co/spaces/{repo}")
