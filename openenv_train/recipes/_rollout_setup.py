"""The recipes' episode player: a Ray rollout pool, the capturing policy endpoint it calls, and the trace writer."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from ..core import OpenEnvTrainError

__all__ = ["Games", "GamesFailed", "check_games", "sandbox_setting"]

console = Console()


def sandbox_setting(mode: str, url: str | None = None, option: str = "env.sandbox") -> bool:
    """Whether env servers run in the OS sandbox: ``on``, ``off``, or ``auto`` (when it is available; never for a
    server ``url`` the recipe does not start); ``option`` names the setting in the message."""
    if url or mode == "off":
        return False
    if mode == "on":
        return True
    from ..sandbox import sandbox_available

    why = sandbox_available()
    if why:
        console.print(f"[yellow]env servers run unsandboxed:[/] {why} ({option}=on makes this an error)")
    return why is None


class Games:
    """A rollout pool on ``env``, its capturing policy endpoint and the trace writer of ``out``: plays sets of
    episodes with the backend each phase sets. ``env`` may be a mix (:class:`~openenv_train.pool.MixEnv` s): one
    :class:`~openenv_train.pool.MixedPool` over them, started at once (an env that fails to start is named by
    :class:`~openenv_train.pool.MixEnvFailed`)."""

    def __init__(self, env: str | Sequence[Any], agent: Any, pool_config: Any, out: Path) -> None:
        from ..policy import ScriptedBackend, captured_policy
        from ..pool import MixedPool, RolloutPool
        from ..trace import TraceWriter

        # closed in reverse: the pool (it flushes the writer), the policy endpoint, the writer
        self._stack = contextlib.ExitStack()
        try:
            self.writer = self._stack.enter_context(TraceWriter(out, resume=True))
            # every phase sets its own backend (play); until then the endpoint has nothing to say
            served = self._stack.enter_context(captured_policy(ScriptedBackend(lambda _: "")))
            self.server, self.capture = served.server, served.capture
            pool_type: Any = RolloutPool if isinstance(env, str) else MixedPool
            self.pool = self._stack.enter_context(pool_type(env, served.base_url, agent=agent, config=pool_config,
                                                            writer=self.writer, capture=self.capture))
            if not isinstance(env, str):
                self.pool.start()  # now, so an env of the mix that does not start stops the run before any phase
        except BaseException:
            self._stack.close()
            raise

    def play_specs(self, backend: Any, specs: Sequence[Any]) -> list[Any]:
        """The episodes of ``specs`` with ``backend`` answering; rows in their order."""
        self.server.replace_backend(backend)
        rows = self.pool.run(specs, include_written=True)  # a phase replayed after a stop reuses its rows
        self.writer.flush()  # on disk before the phase is marked done: a resumed run does not replay it
        return rows

    def play_seeds(self, backend: Any, seeds: Sequence[int], prefix: str,
                   options: Mapping[str, Any] | None = None) -> list[Any]:
        """One episode per reset seed (with the reset ``options`` of every episode); rows in the order of ``seeds``."""
        from ..pool import EpisodeSpec

        return self.play_specs(backend, [EpisodeSpec(f"{prefix}-{i:04d}", dict(options or {}), seed,
                                                     f"{prefix}-{i:04d}") for i, seed in enumerate(seeds)])

    def close(self) -> None:
        """Stop the pool, the policy endpoint and the writer (each even when an earlier one fails)."""
        self._stack.close()


class GamesFailed(OpenEnvTrainError, RuntimeError):
    """Every game of a phase failed: the run stops (resumable) instead of learning from nothing."""


def check_games(rows: Sequence[Any], what: str, out: Path) -> None:
    """Stop the run when every game failed (e.g. the pool lost its actors): training on nothing helps no one."""
    failed = [row for row in rows if not row.ok]
    if rows and len(failed) == len(rows):
        error = failed[0].error
        raise GamesFailed(f"every game of {what} failed ({error.type if error else '?'}: "
                           f"{error.message.splitlines()[0] if error else ''}); fix the cause, then continue with "
                           f"--resume {out}")
