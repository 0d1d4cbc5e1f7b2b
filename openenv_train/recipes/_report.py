"""A run's records: ``metrics.jsonl`` lines, the summary of evaluations (``summary.json``/``.md``) and its plot."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._stats import bootstrap_ci, paired_difference

__all__ = ["MetricsLog", "phase_summary", "plot_training", "write_summary"]


class MetricsLog:
    """Appends one JSON object per line to ``<run>/metrics.jsonl`` (flushed per line: a killed run keeps it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: Mapping[str, Any]) -> None:
        """Append ``record`` (non-finite numbers become null, so every line is strict JSON)."""
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        with self.path.open("a") as f:
            f.write(json.dumps({"time": round(time.time(), 3), **clean}) + "\n")

    def read(self) -> list[dict[str, Any]]:
        """Every complete line written so far."""
        if not self.path.exists():
            return []
        records = []
        for line in self.path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue  # a line torn by a kill
        return records


def phase_summary(per_task: Sequence[Mapping[str, float]], *, resamples: int, seed: int) -> dict[str, Any]:
    """Mean and 95% CI of every metric over the evaluation's tasks, plus the per-task values (for pairing)."""
    names = list(per_task[0]) if per_task else []
    return {"metrics": {name: bootstrap_ci([t[name] for t in per_task], resamples=resamples, seed=seed)
                        for name in names},
            "per_task": {name: [t[name] for t in per_task] for name in names}}


def _difference(after: dict[str, Any], before: dict[str, Any], metric: str, resamples: int,
                seed: int) -> dict[str, float]:
    return paired_difference(after["per_task"][metric], before["per_task"][metric], resamples=resamples, seed=seed)


def write_summary(out: Path, evals: Mapping[str, dict[str, Any]], *, order: Sequence[str], metric: str,
                  labels: Mapping[str, str], extra: Mapping[str, Any], resamples: int = 2000, seed: int = 0,
                  also: Sequence[str] = ()) -> dict[str, Any]:
    """Write ``summary.json`` and ``summary.md`` for the evaluations in ``evals`` (keyed by phase).

    ``improvement`` is the paired difference of ``metric`` between the last and the first phase of ``order``;
    every later phase is also compared with the one before it. Phases in ``also`` are shown, not compared.
    """
    phases = [p for p in order if p in evals]
    shown = phases + [p for p in also if p in evals]
    summary: dict[str, Any] = {"metric": metric, "phases": {p: evals[p]["metrics"] for p in shown}, **extra}
    if len(phases) >= 2:
        summary["improvement"] = {"from": phases[0], "to": phases[-1],
                                  **_difference(evals[phases[-1]], evals[phases[0]], metric, resamples, seed)}
        summary["steps"] = {f"{b}->{a}": _difference(evals[a], evals[b], metric, resamples, seed)
                            for b, a in zip(phases, phases[1:], strict=False)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    (out / "summary.md").write_text(_markdown(summary, shown, labels))
    return summary


def _fmt(stat: Mapping[str, float]) -> str:
    return f"{stat['mean']:.3f} [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"


def _markdown(summary: Mapping[str, Any], phases: Sequence[str], labels: Mapping[str, str]) -> str:
    names = list(summary["phases"][phases[0]]) if phases else []
    lines = [f"# {summary.get('title', 'Run summary')}", "",
             f"Mean per evaluation task with 95% bootstrap confidence intervals (n = "
             f"{summary['phases'][phases[0]][names[0]]['n'] if names else 0} tasks, the same tasks in every phase).",
             "", "| metric | " + " | ".join(labels.get(p, p) for p in phases) + " |",
             "|---|" + "---|" * len(phases)]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(_fmt(summary["phases"][p][name]) for p in phases) + " |")
    if "improvement" in summary:
        imp = summary["improvement"]
        verdict = ("the interval excludes zero" if imp["ci_low"] > 0 or imp["ci_high"] < 0 else
                   "the interval includes zero")
        lines += ["", f"**Improvement in {summary['metric']}** ({labels.get(imp['from'], imp['from'])} → "
                      f"{labels.get(imp['to'], imp['to'])}, paired): {_fmt(imp)}; {verdict}."]
        for key, stat in summary.get("steps", {}).items():
            before, after = key.split("->")
            lines.append(f"- {labels.get(before, before)} → {labels.get(after, after)}: {_fmt(stat)}")
    for key, value in summary.items():
        if key not in ("phases", "improvement", "steps", "metric", "title", "config", "tasks"):
            lines.append(f"- {key}: {json.dumps(value) if not isinstance(value, str) else value}")
    return "\n".join(lines + _task_table(summary.get("tasks", []))) + "\n"


def _task_table(tasks: Sequence[Mapping[str, Any]]) -> list[str]:
    """A table of per-task rows (a sampled evaluation's pass@k per task), every key a column."""
    if not tasks:
        return []
    names = list(tasks[0])
    return ["", "Per task:", "", "| " + " | ".join(names) + " |", "|" + "---|" * len(names),
            *("| " + " | ".join(_cell(t[n]) for n in names) + " |" for t in tasks)]


def _cell(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else json.dumps(value) if isinstance(value, dict) else str(value)


def plot_training(records: Sequence[Mapping[str, Any]], path: Path, *, evals: Mapping[str, dict[str, Any]],
                  labels: Mapping[str, str]) -> Path | None:
    """A PNG of rollout reward and win rate over GRPO steps (per step and a moving average), with each evaluation
    as a point with its 95% interval: the untrained and SFT ones at step 0, the later ones at the last step (a phase
    whose name has ``beam`` is a beam-search evaluation: a square)."""
    import matplotlib

    matplotlib.use("Agg")  # no display here, and never one on a cluster
    import matplotlib.pyplot as plt

    rollouts = [r for r in records if r.get("phase") == "grpo_rollout"]
    last = max((r["step"] for r in rollouts), default=0)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, title in ((axes[0], "reward", "mean reward"), (axes[1], "win", "win rate")):
        if rollouts:
            steps, values = [r["step"] for r in rollouts], [r[key] for r in rollouts]
            ax.plot(steps, values, marker=".", alpha=0.4, label="GRPO rollouts (T=1)")
            window = max(1, len(values) // 10)
            smooth = [sum(values[max(0, i - window + 1):i + 1]) / len(values[max(0, i - window + 1):i + 1])
                      for i in range(len(values))]
            ax.plot(steps, smooth, color="C0", label=f"moving average ({window} steps)")
        for i, (phase, result) in enumerate(evals.items()):
            stat = result["metrics"].get(key)
            if stat is None:
                continue
            x = 0 if phase.startswith(("untrained", "sft")) else last
            ax.errorbar([x], [stat["mean"]], yerr=[[stat["mean"] - stat["ci_low"]], [stat["ci_high"] - stat["mean"]]],
                        fmt="s" if "beam" in phase else "o", capsize=4, color=f"C{i + 1}",
                        label=f"eval ({'beam' if 'beam' in phase else 'greedy'}): {labels.get(phase, phase)}")
        ax.set_xlabel("GRPO step")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
