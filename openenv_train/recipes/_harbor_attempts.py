"""Harbor attempts as the harness recipe's rollouts: groups of attempts of an installed agent on task folders, every
model call through the capturing policy endpoint, each attempt one trace row with the verifier's reward.

The Ray pool plays episodes on env-server sessions and builds each row from their steps; a Harbor attempt instead
owns a task environment (OS sandbox or Docker container), an agent process and a verifier run, and its model calls
are captured by the endpoint in this process. So attempts run here, concurrently on an event loop (as
``harbor.run_tasks`` runs them), behind the same ``run(specs)`` face the trainer's rollout function calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["HarborAttempts", "HarborGames", "ReplyChoices", "trained_turns"]


class ReplyChoices:
    """Serve ``backend`` with every reply restricted to one of ``choices`` (the endpoint's ``guided_choice``): a
    scripted policy whose replies (tool calls in the model's own format, or an end) the model samples and the
    trainer scores under the same mask. A request that names a constraint of its own keeps it."""

    def __init__(self, backend: Any, choices: Sequence[str]) -> None:
        from ..policy import Constraint

        if not choices or any(not isinstance(c, str) or not c for c in choices):
            raise ValueError("harness.choices must be a list of non-empty reply texts (or empty for free replies)")
        self.backend, self.constraint = backend, Constraint(choices=tuple(choices))

    @property
    def model_id(self) -> str:
        """The wrapped backend's name."""
        return str(self.backend.model_id)

    def _restricted(self, request: Any) -> Any:
        return request if request.constraint is not None else dataclasses.replace(request, constraint=self.constraint)

    async def chat(self, request: Any) -> Any:
        """The wrapped backend's answer, restricted to the choices."""
        return await self.backend.chat(self._restricted(request))

    def stream(self, request: Any) -> Any:
        """The wrapped backend's streamed answer, restricted to the choices (a :class:`~openenv_train.policy.
        FixedSampling` streams whatever it wraps)."""
        return self.backend.stream(self._restricted(request))

    async def aclose(self) -> None:
        """Close the wrapped backend."""
        await self.backend.aclose()


def trained_turns(side_calls: str) -> Callable[[Any], list[Any]] | None:
    """Which calls of an attempt train: ``trained``, every call; ``masked``, the main line of its call graph only
    (side calls such as titles and subagent branches train nothing)."""
    if side_calls == "trained":
        return None

    def main_line(row: Any) -> list[Any]:
        main = row.trace.call_graph().main
        keep = set(main.node_ids) if main is not None else set()
        return [turn for turn in row.trace.turns if turn.node_id in keep]

    return main_line


class HarborAttempts:
    """Runs attempts of ``agent`` on Harbor tasks: ``run(specs)``, one attempt per spec (``spec.task["task"]`` names
    the task folder), at most ``concurrency`` at once; rows (with the spec's ids) go to ``writer`` and come back
    in order. An attempt the writer already holds (a resumed run) is read back instead of run again.

    Args:
        tasks: task name -> task folder.
        agent: a Harbor agent (``model``, or an installed agent CLI) whose model calls go to the policy endpoint.
        capture: the endpoint's capture store.
        config: :class:`~openenv_train.harbor.HarborRunConfig` (backend, time limits); its ``run_id`` is the rows'.
    """

    def __init__(self, tasks: dict[str, Path], agent: Any, capture: Any, config: Any, writer: Any,
                 concurrency: int) -> None:
        self.tasks, self.agent, self.capture, self.config = tasks, agent, capture, config
        self.writer, self.concurrency = writer, concurrency
        self.version: int | None = None

    def set_policy_version(self, version: int) -> None:
        """The weights' version (training step) that attempts begun from now on start with."""
        self.version = version

    def run(self, specs: Sequence[Any]) -> list[Any]:
        """Every spec's attempt; rows in the order of ``specs``."""
        from ..trace import iter_traces

        specs = list(specs)
        unknown = sorted({str(s.task.get("task")) for s in specs} - set(self.tasks))
        if unknown:
            raise ValueError(f"no task folder for {', '.join(unknown)}; tasks: {', '.join(sorted(self.tasks))}")
        run_id = self.config.run_id
        done = {s.episode_id for s in specs if self.writer.written((run_id, s.episode_id))}
        rows: dict[str, Any] = {}
        if done:
            self.writer.flush()
            rows = {r.episode_id: r for r in iter_traces(self.writer.run_dir)
                    if r.run_id == run_id and r.episode_id in done}
        todo = [s for s in specs if s.episode_id not in rows]
        for row in asyncio.run(self._run_all(todo)):
            rows[row.episode_id] = row
        return [rows[s.episode_id] for s in specs]

    async def _run_all(self, specs: Sequence[Any]) -> list[Any]:
        gate = asyncio.Semaphore(self.concurrency)
        version = self.version

        async def one(index: int, spec: Any) -> Any:
            from ..harbor import run_task

            async with gate:
                row = await run_task(self.tasks[spec.task["task"]], self.agent, config=self.config, attempt=index,
                                     capture=self.capture)
            # the verifier's reward under its own name (the trainer's reward field); a failed attempt scores 0
            row = row.model_copy(update={
                "episode_id": spec.episode_id, "group_id": spec.group_id, "task": {**row.task, **spec.task},
                "rewards": {**row.rewards, "verifier": float(row.reward or 0.0)},
                "policy": row.policy.model_copy(update={"version": version})})
            self.writer.write(row)
            return row

        return list(await asyncio.gather(*(one(i, s) for i, s in enumerate(specs))))

    def close(self) -> None:
        """Nothing held between batches: each ``run`` starts and ends its attempts."""


class HarborGames:
    """The trace writer of ``out``, a capturing policy endpoint and :class:`HarborAttempts` through it: what the
    GRPO phase needs (``pool``, ``server``, ``writer``), and evaluations with the backend each phase sets.

    Args:
        make_agent: ``make_agent(base_url) -> agent``: the harness, pointed at the endpoint.
        choices: replies the served model is restricted to (empty: free replies).
    """

    def __init__(self, out: Path, tasks: dict[str, Path], make_agent: Callable[[str], Any], config: Any, *,
                 concurrency: int, choices: Sequence[str] = ()) -> None:
        from ..policy import ScriptedBackend, captured_policy
        from ..trace import TraceWriter

        self.choices = tuple(choices)
        self._stack = contextlib.ExitStack()
        try:
            self.writer = self._stack.enter_context(TraceWriter(out, resume=True))
            # every phase sets its own backend; until then the endpoint has nothing to say
            served = self._stack.enter_context(captured_policy(ScriptedBackend(lambda _: "")))
            self.server, self.capture = served.server, served.capture
            self.pool = HarborAttempts(tasks, make_agent(served.base_url), self.capture, config, self.writer,
                                       concurrency)
        except BaseException:
            self._stack.close()
            raise

    def serve(self, backend: Any) -> Any:
        """``backend`` as the endpoint serves it: restricted to the choices, when there are any."""
        return ReplyChoices(backend, self.choices) if self.choices else backend

    def play_specs(self, backend: Any, specs: Sequence[Any]) -> list[Any]:
        """The attempts of ``specs`` with ``backend`` answering; rows in their order, on disk when this returns."""
        self.server.replace_backend(self.serve(backend))
        rows = self.pool.run(specs)
        self.writer.flush()
        return rows

    def close(self) -> None:
        """Stop the policy endpoint and close the writer."""
        self._stack.close()
