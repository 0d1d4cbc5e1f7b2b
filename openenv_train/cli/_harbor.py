"""``openenv-train harbor run TASK...``: run Harbor task folders with an agent and write their trace dataset."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ._app import app, fail

if TYPE_CHECKING:
    from ..trace import TraceRow

harbor_app = typer.Typer(help="Run Harbor-format tasks (task.toml, instruction.md, environment/, tests/test.sh).",
                         no_args_is_help=True)
app.add_typer(harbor_app, name="harbor")


@harbor_app.command("run")
def run(
    tasks: Annotated[list[Path], typer.Argument(help="Task folders, or folders holding task folders.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Run folder; traces go to RUN/traces/*.parquet.")],
    agent: Annotated[str, typer.Option(help="oracle (runs solution/solve.sh), nop (does nothing), model (our bash-tool "
                                            "loop), an installed agent CLI (claude-code, codex, opencode, gemini-cli, "
                                            "qwen-code, mini-swe-agent: `openenv-train agents list`), or command "
                                            "(--agent-command).")] = "oracle",
    model: Annotated[str | None, typer.Option(help="With --agent model, an agent CLI or command: a model folder or an "
                                                   "http(s):// OpenAI-compatible URL, served by the capture proxy.")] = None,
    model_name: Annotated[str | None, typer.Option(help="Model to ask an upstream URL for (default: the first it "
                                                        "lists); the served name of a local model; the model name an "
                                                        "agent CLI sends.")] = None,
    agent_command: Annotated[str | None, typer.Option(help="With --agent command: the CLI's command line, with "
                                                           "{base_url}, {api_key}, {model} and {prompt} "
                                                           "placeholders.")] = None,
    agent_mount: Annotated[list[str] | None, typer.Option(help="With --agent command: a host folder the command "
                                                               "needs (its installation), mounted read-only; "
                                                               "repeatable.")] = None,
    api_key: Annotated[str | None, typer.Option(envvar="OPENAI_API_KEY", help="Key of an upstream URL.")] = None,
    env: Annotated[str, typer.Option(help="sandbox (OS sandbox), docker (needs an engine), or auto.")] = "sandbox",
    docker_base_image: Annotated[str | None, typer.Option(help="Docker backend: build task images FROM this local "
                                                              "image instead of their Dockerfile's FROM (offline "
                                                              "engines).")] = None,
    attempts: Annotated[int, typer.Option("--attempts", "-k", help="Attempts per task.")] = 1,
    concurrency: Annotated[int, typer.Option("--concurrency", "-n", help="Attempts run at once.")] = 1,
    max_turns: Annotated[int, typer.Option(help="Most model replies per attempt.")] = 20,
    temperature: Annotated[float, typer.Option(help="Sampling temperature of the model agent.")] = 0.7,
    max_tokens: Annotated[int, typer.Option(help="Most tokens per model reply.")] = 1024,
    agent_timeout: Annotated[float | None, typer.Option(help="Seconds; overrides every task's \\[agent] "
                                                             "timeout_sec.")] = None,
    timeout_multiplier: Annotated[float, typer.Option(help="Scales agent and verifier timeouts.")] = 1.0,
    run_id: Annotated[str | None, typer.Option(help="Run id in the rows; default the run folder's name. "
                                                    "Attempts already in RUN are skipped.")] = None,
) -> None:
    """Run each task's attempt(s): workspace, agent, tests/test.sh; one trace row per attempt, then a table."""
    from ..harbor import AGENT_SPECS, HarborError, HarborRunConfig, InstalledAgent
    from ..trace import TraceWriter

    builtin = ("oracle", "nop", "model", "command")
    if agent not in builtin and agent not in AGENT_SPECS:
        raise fail(f"--agent must be oracle, nop, model, command or an agent CLI ({', '.join(AGENT_SPECS)}), got "
                   f"{agent!r}", code=2)
    if (agent not in ("oracle", "nop")) != (model is not None):
        raise fail("--model is required with --agent model, command or an agent CLI (and only then): the model the "
                   "capture proxy serves (a model folder or an http(s):// URL)", code=2)
    if (agent == "command") != (agent_command is not None):
        raise fail("--agent-command is required with --agent command (and only then)", code=2)
    if env not in ("sandbox", "docker", "auto"):
        raise fail(f"--env must be sandbox, docker or auto, got {env!r}", code=2)
    if agent in AGENT_SPECS:
        try:
            InstalledAgent(agent, "http://127.0.0.1").check()
        except HarborError as exc:
            raise fail(str(exc)) from None
    try:
        config = HarborRunConfig(backend=env, run_id=run_id or output.resolve().name, attempts=attempts,  # type: ignore[arg-type]
                                 concurrency=concurrency, agent_timeout_s=agent_timeout,
                                 timeout_multiplier=timeout_multiplier, docker_base_image=docker_base_image)
    except ValueError as exc:
        raise fail(str(exc), code=2) from None
    options: dict[str, Any] = {"max_turns": max_turns, "temperature": temperature, "max_tokens": max_tokens}
    if agent in AGENT_SPECS:
        options = {"agent": agent, "model": model_name}
    elif agent == "command":
        options = {"command": agent_command, "ro_paths": tuple(agent_mount or ()), "model": model_name or "served"}
    console = Console()
    skipped: list[str] = []
    try:
        with TraceWriter(output, flush_rows=1) as writer:
            rows = asyncio.run(_run(tasks, agent, model, model_name, api_key, config, options, writer,
                                    lambda path, k: skipped.append(f"{path.name}#{k}")))
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    if skipped:
        console.print(f"skipped {len(skipped)} attempt(s) already in {output}: {', '.join(skipped)}")
    _print_table(console, rows)
    console.print(f"traces: {output / 'traces'}")
    raise typer.Exit(0 if all(row.ok for row in rows) else 1)


async def _run(tasks: list[Path], agent: str, model: str | None, model_name: str | None, api_key: str | None,
               config: Any,
               options: dict[str, Any], writer: Any, on_skip: Any) -> list[TraceRow]:
    from ..harbor import CommandAgent, InstalledAgent, ModelAgent, NopAgent, OracleAgent, run_tasks
    from ..policy import policy_endpoint

    if model is None:
        fixed = OracleAgent() if agent == "oracle" else NopAgent()
        return await run_tasks(tasks, fixed, config=config, writer=writer, on_skip=on_skip)
    async with policy_endpoint(model, api_key=api_key, model_name=model_name) as (url, capture):
        worker: Any
        if agent == "model":
            worker = ModelAgent(base_url=url, **options)
        elif agent == "command":
            worker = CommandAgent(base_url=url, **options)
        else:
            worker = InstalledAgent(base_url=url, **options)
        return await run_tasks(tasks, worker, config=config, writer=writer, capture=capture, on_skip=on_skip)


def _print_table(console: Console, rows: list[TraceRow]) -> None:
    table = Table("task", "attempt", "reward", "ok", "time (s)", "error")
    for row in rows:
        reward = "-" if row.reward is None else f"{row.reward:g}"
        error = f"{row.error.type}: {row.error.message}"[:120] if row.error else ""
        table.add_row(str(row.task.get("name")), row.episode_id.rsplit("#", 1)[-1], reward,
                      "[green]yes[/]" if row.ok else "[red]no[/]", f"{row.timings.get('total', 0.0):.1f}", error)
    console.print(table)
    warnings = {w for row in rows for w in row.task.get("warnings", [])}
    for warning in sorted(warnings):
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    scored = [row.reward for row in rows if row.reward is not None]
    mean = f"{sum(scored) / len(scored):.3f}" if scored else "-"
    console.print(f"{len(rows)} attempt(s), mean reward {mean}, {sum(not row.ok for row in rows)} failed")
