"""What a training recipe does around its own steps: the run folder, numbered phases, recorded evaluations,
training steps that a resumed run skips.

    run = RecipeRun.open(out, cfg.as_dict(), resume=resume, console=console, phases=7)
    with run.phase("baseline", 3):
        run.evaluate("untrained", "untrained", play, row_metrics, resamples=2000, seed=0, report=describe)
    with run.phase("GRPO", 5):
        model = run.train("grpo", out / "checkpoints" / "final", model, train, enabled=True, setting="grpo.enabled")

A resumed run (``--resume``) finds in ``state.json`` the evaluations and training steps that finished before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from ._report import MetricsLog, phase_summary
from ._rollout_setup import check_games
from ._run_state import RunState

__all__ = ["RecipeRun"]


@dataclass
class RecipeRun:
    """One run folder (``runs/<name>/``): its ``state.json``, ``metrics.jsonl`` and the console its phases print to."""

    out: Path
    state: RunState
    metrics: MetricsLog
    console: Console
    phases: int
    """How many numbered phases the recipe has (the banners say ``3/7``)."""

    @classmethod
    def open(cls, out: Path, config: Mapping[str, Any], *, resume: bool, console: Console, phases: int) -> RecipeRun:
        """Make ``out`` (or reopen it, when ``resume``) and write ``config`` to its ``config.yaml``.

        Raises:
            ValueError: ``out`` holds a run already and ``resume`` is false, or ``out`` cannot be written.
        """
        if not resume and (out / "state.json").exists():
            raise ValueError(f"{out} holds a run already: resume it with --resume {out}, or choose another "
                             "output.name")
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-probe"
        try:
            probe.write_bytes(b"x" * 4096)
            probe.unlink()
        except OSError as exc:
            raise ValueError(f"cannot write the run to {out}: {exc}; choose another output.dir or free space") from None
        (out / "config.yaml").write_text(yaml.safe_dump(dict(config), sort_keys=False))
        return cls(out, RunState(out / "state.json"), MetricsLog(out / "metrics.jsonl"), console, phases)

    @contextmanager
    def phase(self, title: str, number: int) -> Iterator[None]:
        """A banner ``number/phases title`` before the block, its wall time after it."""
        self.console.rule(f"[bold]{number}/{self.phases} {title}")
        start = time.perf_counter()
        yield
        self.console.print(f"[dim]{title}: {time.perf_counter() - start:.1f}s[/]")

    def evaluate(self, phase: str, label: str, play: Callable[[], Sequence[Any]],
                 row_metrics: Callable[[Any], Mapping[str, float]], *, resamples: int, seed: int,
                 report: Callable[[dict[str, Any], int], str],
                 extra: Callable[[list[Mapping[str, float]]], Mapping[str, Any]] | None = None,
                 per_task: Callable[[list[Any]], list[Mapping[str, float]]] | None = None) -> dict[str, Any]:
        """The evaluation ``phase``: recorded before (a resumed run), or played now and recorded.

        Args:
            phase: its key in ``state.json`` and ``summary.json`` (``untrained``, ``grpo``, ...).
            label: its name in messages (``after GRPO``).
            play: plays the evaluation's episodes; returns their trace rows.
            row_metrics: one row's metrics (means and 95% CIs over the rows go to the summary).
            resamples: bootstrap resamples of the intervals.
            seed: the bootstrap's seed.
            report: the console line of a result, given the number of rows.
            extra: more result fields from the per-row metrics (they come before ``failed_episodes``).
            per_task: the metrics of each task from the rows, when a task is several rows (its samples);
                default ``row_metrics`` of each row, one task each.

        Raises:
            GamesFailed: too many episodes failed (see :func:`check_games`).
        """
        if phase in self.state.data["evals"]:
            return self.state.data["evals"][phase]  # type: ignore[no-any-return]
        rows = play()
        check_games(rows, f"the {label} evaluation", self.out)
        tasks = per_task(list(rows)) if per_task is not None else [row_metrics(row) for row in rows]
        result = phase_summary(tasks, resamples=resamples, seed=seed)
        result.update(extra(tasks) if extra is not None else {})
        result["failed_episodes"] = sum(not row.ok for row in rows)
        self.metrics.write({"phase": f"eval_{phase}", **{k: v["mean"] for k, v in result["metrics"].items()}})
        self.console.print(report(result, len(rows)))
        self.state.finish(f"eval_{phase}", evals={**self.state.data["evals"], phase: result})
        return result

    def train(self, step: str, checkpoint: Path, model: Any, train: Callable[[], tuple[Any, Mapping[str, Any]]], *,
              enabled: bool, setting: str) -> Any:
        """The training ``step``: skipped when ``setting`` is off, loaded from ``checkpoint`` when it finished
        before, else ``train()`` (which returns the model and the step's budget record for ``state.json``)."""
        if not enabled:
            self.console.print(f"{setting} is false: skipped")
            return model
        if self.state.done(step):
            from transformers import AutoModelForCausalLM

            model = AutoModelForCausalLM.from_pretrained(checkpoint)
            self.console.print(f"done before: loaded {checkpoint}")
            return model
        model, record = train()
        self.state.finish(step, budgets={**self.state.data.get("budgets", {}), step: record})
        return model
