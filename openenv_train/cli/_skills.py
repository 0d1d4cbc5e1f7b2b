"""``openenv-train skills add|preview``: a skill file (`<skill>/SKILL.md`) that teaches a coding agent (Claude Code,
Codex, ...) this CLI.

As OpenEnv's ``openenv skills``: the skill is written once to a central folder (``.agents/skills``, or
``~/.agents/skills`` with ``--global``) and each chosen agent's skills folder gets a relative symlink to it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Annotated

import typer

from ._app import app, fail

__all__ = ["SKILL_ID", "skill_markdown"]

SKILL_ID = "openenv-train-cli"
_AGENTS = ("claude", "codex", "cursor", "opencode")
_LOCAL = {"claude": ".claude/skills", "codex": ".codex/skills", "cursor": ".cursor/skills",
          "opencode": ".opencode/skills"}
_GLOBAL = {"claude": "~/.claude/skills", "codex": "~/.codex/skills", "cursor": "~/.cursor/skills",
           "opencode": "~/.config/opencode/skills"}

_COMMANDS = (
    ("init NAME", "scaffold an env folder (openenv.yaml, models, client, server)"),
    ("serve ENV [--mode production]", "serve a catalog env, module:Class or env folder (/ws, /mcp, HTTP routes)"),
    ("validate [PATH | --url URL] [--level static|runtime|semantic] [--policy v1|v2]",
     "check an env folder or a running server; each failure names the fix"),
    ("catalog [--family F] [--json]", "list the built-in environments"),
    ("build / push [--registry R | --hardware H --env-var K=V --secret K=V --create-pr]",
     "build the env's image; upload it as a Docker Space or to a registry"),
    ("fork OWNER/SPACE", "duplicate a Hub Space into your account"),
    ("collect / eval / score / train", "roll out a policy, evaluate, score traces with rubrics, train"),
    ("skills add --claude|--codex [--force]", "install this skill (again with --force to update it)"),
)


def skill_markdown() -> str:
    """The skill file's text: front matter (name, description) and the commands, stamped with this version."""
    from .. import __version__

    lines = ["---", f"name: {SKILL_ID}",
             'description: "openenv-train CLI for serving, validating, collecting from and training on OpenEnv '
             'environments."', "---", "", "Install: `pip install openenv-train`", "",
             f"Generated with openenv-train {__version__}; run `openenv-train skills add --force` to regenerate.", "",
             "## Commands", ""]
    lines += [f"- `openenv-train {usage}`: {what}" for usage, what in _COMMANDS]
    lines += ["", "Run `openenv-train COMMAND --help` for every option. Servers bind 127.0.0.1 unless told otherwise."]
    return "\n".join(lines) + "\n"


def _replace(path: Path, force: bool) -> None:
    if path.exists() or path.is_symlink():
        if not force:
            raise fail(f"{path} already exists; run again with --force to overwrite it")
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _install(skills_dir: Path, force: bool) -> Path:
    skills_dir = skills_dir.expanduser().resolve()
    skills_dir.mkdir(parents=True, exist_ok=True)
    dest = skills_dir / SKILL_ID
    _replace(dest, force)
    dest.mkdir()
    (dest / "SKILL.md").write_text(skill_markdown(), encoding="utf-8")
    return dest


skills_app = typer.Typer(help="Install a skill that teaches coding agents this CLI.", no_args_is_help=True)
app.add_typer(skills_app, name="skills")


@skills_app.command("preview")
def preview() -> None:
    """Print the skill file that 'skills add' writes."""
    typer.echo(skill_markdown(), nl=False)


@skills_app.command("add")
def add(
    claude: Annotated[bool, typer.Option("--claude", help="Link it for Claude Code (.claude/skills).")] = False,
    codex: Annotated[bool, typer.Option("--codex", help="Link it for Codex (.codex/skills).")] = False,
    cursor: Annotated[bool, typer.Option("--cursor", help="Link it for Cursor (.cursor/skills).")] = False,
    opencode: Annotated[bool, typer.Option("--opencode", help="Link it for OpenCode (.opencode/skills).")] = False,
    global_: Annotated[bool, typer.Option("--global", "-g", help="Install for the user (~/...) instead of this "
                                                                 "project.")] = False,
    dest: Annotated[Path | None, typer.Option(help="Write it into this skills folder instead (no links).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite a skill already there.")] = False,
) -> None:
    """Write the skill to .agents/skills (or ~/.agents/skills) and link it into each chosen agent's skills folder."""
    chosen = [agent for agent, on in zip(_AGENTS, (claude, codex, cursor, opencode), strict=True) if on]
    if dest is not None:
        if chosen or global_:
            raise fail("--dest writes one folder; it does not combine with --claude, --codex, --cursor, --opencode "
                       "or --global", code=2)
        typer.echo(f"installed {SKILL_ID} to {_install(dest, force)}")
        return
    central = _install(Path("~/.agents/skills" if global_ else ".agents/skills"), force)
    typer.echo(f"installed {SKILL_ID} to {central}")
    for agent in chosen:
        folder = Path((_GLOBAL if global_ else _LOCAL)[agent]).expanduser().resolve()
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / SKILL_ID
        _replace(link, force)
        link.symlink_to(os.path.relpath(central, folder))
        typer.echo(f"linked {link} -> {central}")
