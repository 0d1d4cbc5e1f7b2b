"""The recipe's game player: a Ray rollout pool, the capturing policy endpoint it calls, and the trace writer."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from ._wordle_config import GrpoWordleConfig

__all__ = ["GamesFailed", "WordleGames", "check_games"]

console = Console()


def _sandbox(cfg: GrpoWordleConfig) -> bool:
    if cfg.env.url or cfg.env.sandbox == "off":
        return False
    if cfg.env.sandbox == "on":
        return True
    from ..sandbox import sandbox_available

    why = sandbox_available()
    if why:
        console.print(f"[yellow]env servers run unsandboxed:[/] {why} (env.sandbox=on makes this an error)")
    return why is None


class WordleGames:
    """The pool, its policy endpoint and the trace writer: plays sets of games with the backend each phase sets."""

    def __init__(self, cfg: GrpoWordleConfig, out: Path) -> None:
        from ..policy import ScriptedBackend, captured_policy
        from ..pool import RolloutPool
        from ..trace import TraceWriter
        from ._wordle import WordleAgent

        # closed in reverse: the pool (it flushes the writer), the policy endpoint, the writer
        self._stack = contextlib.ExitStack()
        try:
            self.writer = self._stack.enter_context(TraceWriter(out, resume=True))
            # every phase sets its own backend (play); until then the endpoint has nothing to say
            served = self._stack.enter_context(captured_policy(ScriptedBackend(lambda _: "")))
            self.server, self.capture = served.server, served.capture
            agent = WordleAgent(cfg.constrained, cfg.env.system_prompt)
            self.pool = self._stack.enter_context(RolloutPool(
                cfg.env.url or "wordle", served.base_url, agent=agent, config=cfg.pool_config(sandbox=_sandbox(cfg)),
                writer=self.writer, capture=self.capture))
        except BaseException:
            self._stack.close()
            raise

    def play(self, backend: Any, words: Sequence[str], prefix: str) -> list[Any]:
        """One game per secret, with ``backend`` answering; rows in the order of ``words``."""
        from ..pool import EpisodeSpec

        self.server.replace_backend(backend)
        specs = [EpisodeSpec(f"{prefix}-{i:04d}", {"task": word}, i, f"{prefix}-{i:04d}") for i, word in
                 enumerate(words)]
        rows = self.pool.run(specs, include_written=True)  # a phase replayed after a stop reuses its rows
        self.writer.flush()  # on disk before the phase is marked done: a resumed run does not replay it
        return rows

    def close(self) -> None:
        """Stop the pool, the policy endpoint and the writer (each even when an earlier one fails)."""
        self._stack.close()


class GamesFailed(RuntimeError):
    """Every game of a phase failed: the run stops (resumable) instead of learning from nothing."""


def check_games(rows: Sequence[Any], what: str, out: Path) -> None:
    """Stop the run when every game failed (e.g. the pool lost its actors): training on nothing helps no one."""
    failed = [row for row in rows if not row.ok]
    if rows and len(failed) == len(rows):
        error = failed[0].error
        raise GamesFailed(f"every game of {what} failed ({error.type if error else '?'}: "
                           f"{error.message.splitlines()[0] if error else ''}); fix the cause, then continue with "
                           f"--resume {out}")
