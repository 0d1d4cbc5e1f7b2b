"""Agents that are real CLIs run inside the task's environment: :class:`InstalledAgent` (Claude Code, Codex,
OpenCode, Gemini CLI, mini-swe-agent, pinned and installed by ``openenv-train agents install NAME``) and
:class:`CommandAgent` (any CLI, given how it takes its base URL, key, model and prompt).

How a call gets out: the OS sandbox has no network. The host opens a Unix socket in a fresh folder that forwards
to the policy endpoint (:class:`._proxy_bridge.ProxyBridge`); that folder is bound into the sandbox, where a
small forwarder (:mod:`._forwarder`) listens on the sandbox's own loopback, ``127.0.0.1:18080``, and the CLI's
base URL points there. Nothing else is reachable. In a Docker container (``--network none``) the same forwarder
runs on the host's Python, which the container mounts with the agent's installation, the host's ``node`` and the
socket's folder (:attr:`InstalledAgent.host_paths`). The CLI's key is the attempt's capture session id, so the
endpoint records every call, in whatever dialect, under the attempt's episode.

The CLI runs once, non-interactively, with the task's instruction as its prompt, in the task's WORKDIR, with a
fresh HOME under the sandbox's private /tmp, its installation mounted read-only, and the agent's time limit. Its
output goes to ``/logs/agent/<name>.txt``; the attempt's row holds one agent step with the exit code and the
output's tail. A non-zero exit is an :class:`AgentExitError` (the tests still run on what the agent left).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox import SandboxConfig, python_roots
from ..trace import EnvStep
from ._agent_install import agent_binary, agent_spec, installed_dir
from ._agent_specs import PROMPT_VAR, AgentCall, AgentLaunch
from ._agents import AgentContext
from ._proxy_bridge import ProxyBridge
from ._task_errors import AgentExitError

__all__ = ["SANDBOX_PROXY_PORT", "CommandAgent", "InstalledAgent"]

SANDBOX_PROXY_PORT = 18080
"""The port of the policy endpoint on the sandbox's loopback (the forwarder's)."""
_HOME = "/tmp/openenv-agent-home"
_FORWARDER = str(Path(__file__).with_name("_forwarder.py"))
_TAIL = 4000


def program_paths(*paths: str) -> list[str]:
    """What a container must mount to run an agent CLI: ``paths`` (its installation), this Python (the forwarder
    runs on it, and mini-swe-agent's venv is built on it) with this package, and the host's ``node``."""
    node = shutil.which("node")
    return [*paths, *python_roots(SandboxConfig()), *([os.path.realpath(node)] if node else [])]


def _script(launch: AgentLaunch, socket_path: str, log: str) -> tuple[str, dict[str, str]]:
    """The bash script of one run and the variables it reads (config files travel as variables)."""
    env = {**launch.env, "HOME": _HOME}
    node = os.path.realpath(shutil.which("node") or "/usr/bin/node")
    lines = ["set -u", f"mkdir -p {_HOME} {shlex.quote(str(Path(log).parent))}",
             # in a container the host's node is mounted at its host path, which may not be on the image's PATH
             f'export PATH="$PATH:{shlex.quote(os.path.dirname(node))}"']
    for i, (name, text) in enumerate(sorted(launch.files.items())):
        target = shlex.quote(f"{_HOME}/{name}")
        env[f"OPENENV_AGENT_FILE_{i}"] = text
        lines.append(f"mkdir -p \"$(dirname {target})\" && printf '%s' \"$OPENENV_AGENT_FILE_{i}\" > {target}")
    ready = "/tmp/openenv-forwarder.ready"
    lines += [
        f"{shlex.quote(sys.executable)} -I {shlex.quote(_FORWARDER)} {shlex.quote(socket_path)} {SANDBOX_PROXY_PORT} "
        f"{ready} & forwarder=$!",
        f"for _ in $(seq 1 1000); do [ -e {ready} ] && break; kill -0 $forwarder 2>/dev/null || break; sleep 0.01; done",
        f"[ -e {ready} ] || {{ echo 'openenv-train: the proxy forwarder did not start' >&2; exit 98; }}",
        # braces: a command line's own redirections and lists keep their meaning
        f"{{ {launch.shell()}\n}} > {shlex.quote(log)} 2>&1 < /dev/null",
        "status=$?",
        "kill $forwarder 2>/dev/null",
        f"tail -c {_TAIL} {shlex.quote(log)}",
        "exit $status",
    ]
    return "\n".join(lines), env


async def run_cli(ctx: AgentContext, name: str, launch: AgentLaunch, *, base_url: str, prompt: str,
                  ro_paths: Sequence[str] = ()) -> None:
    """Run ``launch`` once in ``ctx.env``, its calls going to ``base_url`` through the socket bridge; one step.

    Raises:
        AgentTimeoutError: the agent's time ran out.
        AgentExitError: the CLI exited with a non-zero status.
    """
    remaining = ctx.remaining()
    if remaining <= 0:
        raise ctx.timeout_error()
    log = ctx.env.path(f"/logs/agent/{name}.txt")
    async with ProxyBridge(base_url, parent=getattr(ctx.env, "socket_parent", None)) as bridge:
        script, env = _script(launch, bridge.socket_path, log)
        env[PROMPT_VAR] = prompt
        result = await ctx.env.exec_program(script, timeout_s=remaining, env=env, ro_paths=ro_paths,
                                            socket_dir=bridge.folder)
    ctx.steps.append(EnvStep(
        action={"phase": "agent", "tool": name, "command": launch.shell()},
        observation={"exit_code": result.exit_code, "stdout": result.stdout[-ctx.step_output_limit:],
                     "stderr": result.stderr[-ctx.step_output_limit:], "timed_out": result.timed_out,
                     "log": f"/logs/agent/{name}.txt"},
        seconds=result.duration_s))
    if result.timed_out:
        raise ctx.timeout_error()
    if result.exit_code != 0:
        tail = (result.stdout + result.stderr)[-800:].strip()
        raise AgentExitError(f"{name} exited with status {result.exit_code} on task {ctx.task.name}: {tail}")


@dataclass
class InstalledAgent:
    """A pinned agent CLI (``claude-code``, ``codex``, ``opencode``, ``gemini-cli``, ``qwen-code``,
    ``mini-swe-agent``) working on a Harbor task through the capturing policy endpoint at ``base_url``; usable
    with :func:`run_task` and :func:`run_tasks` like any agent.

    The CLI must be in the agent cache (``openenv-train agents install NAME``); :meth:`check` says so up front.
    It runs in the OS sandbox or in a Docker container (which mounts :attr:`host_paths` read-only and a socket
    folder; the image needs bash and glibc, as Debian's have).

    Args:
        agent: the agent's name (a key of ``AGENT_SPECS``).
        base_url: the policy endpoint, ``http://127.0.0.1:PORT`` (a path such as ``/v1`` is ignored).
        model: the model name the CLI sends (default: the spec's ``default_model``; the endpoint serves its one
            model whatever the name).
        agents_dir: the agent cache (default :func:`agents_dir`).
        args: more arguments for the CLI, after the spec's (e.g. ``["--max-turns", "8"]`` for Claude Code).
        env: more variables for the CLI, over the spec's.

    Raises:
        KeyError: no such agent.
    """

    agent: str
    base_url: str
    model: str | None = None
    agents_dir: Path | None = None
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.spec = agent_spec(self.agent)
        self.name = self.spec.name
        if self.model is None:
            self.model = self.spec.default_model

    @property
    def host_paths(self) -> list[str]:
        """The host paths a container mounts for this agent (its installation, the host's Python and node)."""
        return program_paths(str(installed_dir(self.spec, self.agents_dir)))

    def check(self) -> Path:
        """The installed CLI's path.

        Raises:
            AgentNotInstalled: it is not installed (the message names the install command), or Node.js is missing.
        """
        return agent_binary(self.spec, self.agents_dir)

    async def run(self, ctx: AgentContext) -> None:
        """Run the CLI once on the task (see the module docstring)."""
        binary = self.check()
        assert ctx.session_id is not None, "run_task opens a capture session per attempt"
        call = AgentCall(origin=f"http://127.0.0.1:{SANDBOX_PROXY_PORT}", api_key=ctx.session_id,
                         model=str(self.model), home=_HOME)
        ctx.model_id = self.model
        launch = self.spec.launch(call, str(binary))
        launch = AgentLaunch({**launch.env, **self.env}, launch.files, [*launch.argv, *self.args])
        await run_cli(ctx, self.name, launch, base_url=self.base_url,
                      prompt=ctx.task.instruction, ro_paths=[str(installed_dir(self.spec, self.agents_dir))])


@dataclass
class CommandAgent:
    """Any CLI as an agent: ``command`` is a shell command line with placeholders ``{base_url}`` (the endpoint as
    the CLI reaches it, ``http://127.0.0.1:18080``, no ``/v1``), ``{api_key}`` (the per-episode key),
    ``{model}`` and ``{prompt}`` (the task's instruction), each substituted as one shell word. ``env`` values may
    use the same placeholders (substituted as text). It runs like an :class:`InstalledAgent`: once, in the
    sandbox, HOME fresh, ``ro_paths`` (its installation) mounted read-only.

    >>> CommandAgent("mycli --url {base_url}/v1 --key {api_key} -p {prompt}", "http://127.0.0.1:8000").name
    'command'
    """

    command: str
    base_url: str
    model: str = "served"
    env: Mapping[str, str] = field(default_factory=dict)
    ro_paths: Sequence[str] = ()
    name: str = "command"

    @property
    def host_paths(self) -> list[str]:
        """The host paths a container mounts for this command (``ro_paths``, the host's Python and node)."""
        return program_paths(*self.ro_paths)

    async def run(self, ctx: AgentContext) -> None:
        """Run the command once on the task."""
        assert ctx.session_id is not None, "run_task opens a capture session per attempt"
        origin = f"http://127.0.0.1:{SANDBOX_PROXY_PORT}"
        values = {"base_url": origin, "api_key": ctx.session_id, "model": self.model}
        words = {k: shlex.quote(v) for k, v in values.items()}
        line = self.command.format(**words, prompt=f'"${PROMPT_VAR}"')
        env = {k: v.format(**values, prompt=ctx.task.instruction) for k, v in self.env.items()}
        ctx.model_id = self.model
        await run_cli(ctx, self.name, _Line(env, line), base_url=self.base_url, prompt=ctx.task.instruction,
                      ro_paths=self.ro_paths)


class _Line(AgentLaunch):
    """A launch given as a ready shell line."""

    def __init__(self, env: dict[str, str], line: str) -> None:
        super().__init__(env, {}, [line])

    def shell(self) -> str:
        return self.argv[0]
