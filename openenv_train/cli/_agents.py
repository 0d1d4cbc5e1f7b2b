"""``openenv-train agents install NAME...`` and ``agents list``: the pinned agent CLIs that ``harbor run`` runs."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ._app import app, fail

agents_app = typer.Typer(help="Agent CLIs (Claude Code, Codex, OpenCode, Gemini CLI, mini-swe-agent), pinned, "
                              "installed into a cache that `harbor run --agent NAME` uses.", no_args_is_help=True)
app.add_typer(agents_app, name="agents")


@agents_app.command("install")
def install(
    names: Annotated[list[str], typer.Argument(help="Agents to install, or `all`.")],
    force: Annotated[bool, typer.Option(help="Reinstall even when the pinned version is there.")] = False,
    jobs: Annotated[int, typer.Option(min=1, help="Installs run at once (each an npm or pip process, mostly waiting "
                                                  "on downloads).")] = 6,
) -> None:
    """Install agents' pinned packages (npm or pip) into the agent cache ($OPENENV_TRAIN_AGENTS_DIR)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from ..harbor import AGENT_SPECS, HarborError, agents_dir, install_agent

    wanted = list(dict.fromkeys(AGENT_SPECS if names == ["all"] else names))
    unknown = [name for name in wanted if name not in AGENT_SPECS]
    if unknown:
        raise fail(f"no agent {', '.join(map(repr, unknown))}; the agents are: {', '.join(AGENT_SPECS)} (or all)",
                   code=2)
    console = Console()
    for name in wanted:
        spec = AGENT_SPECS[name]
        console.print(f"installing {spec.pinned} ({spec.installer}) ...", highlight=False)
    failed: list[str] = []
    # one install failing does not stop the others: what did install stays installed, and every failure is named
    with ThreadPoolExecutor(min(jobs, len(wanted))) as pool:
        futures = {pool.submit(install_agent, name, force=force): name for name in wanted}
        for future in as_completed(futures):
            name = futures[future]
            try:
                console.print(f"  {name}: {future.result()}", highlight=False)
            except HarborError as exc:
                failed.append(f"{name}: {exc}")
    console.print(f"agent cache: {agents_dir()}", highlight=False)
    if failed:
        raise fail("; ".join(failed))


@agents_app.command("list")
def list_agents() -> None:
    """The agents, their pinned versions, dialects and licences, and whether each is installed here."""
    from ..harbor import AGENT_SPECS, HarborError, agent_binary

    table = Table("agent", "package", "dialect", "licence", "installed")
    for spec in AGENT_SPECS.values():
        try:
            agent_binary(spec)
            installed = "[green]yes[/]"
        except HarborError:
            installed = f"no: openenv-train agents install {spec.name}"
        table.add_row(spec.name, spec.pinned, spec.dialect, spec.licence, installed)
    Console().print(table)
