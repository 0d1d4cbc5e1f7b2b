"""GRPO on the traces of an agent harness working on Harbor tasks, its model calls answered by the trainer's weights.

    python -m openenv_train.recipes.grpo_harness harness=model tasks=PATH [--config FILE] [section.key=value ...]
    openenv-train train grpo_harness -s harness=model -s tasks=PATH

1. The Harbor tasks (task folders under ``tasks``), the capturing policy endpoint and the model (the tiny offline
   one, or ``model.path=...``).
2. The untrained policy: ``eval.attempts`` attempts of the harness per task, sampled at ``eval.temperature``.
3. GRPO: each step runs ``grpo.num_generations`` attempts of each of ``grpo.prompts_per_step`` tasks; the reward
   is the verifier's (tests/test.sh). Every main-line model call of an attempt is a training row of its own (its
   captured prompt and completion ids and sampling logprobs) with the attempt's advantage; side calls and
   subagent branches are trained or masked (``attempt.side_calls``). With ``grpo.overlap`` the next step's
   attempts run while the optimizer steps (one step off-policy; the importance ratio against the captured
   logprobs corrects it).
4. The trained policy on the same tasks, the same way.
5. ``runs/grpo-harness-<harness>/``: traces, checkpoints, ``metrics.jsonl``, ``training.png``, ``summary.md``/
   ``.json`` (per-task pass rates before and after, and their paired difference with its 95% CI).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from ._config import config_to_dict
from ._entry import recipe_main
from ._grpo_phase import GRPOSection, train_grpo
from ._harbor_attempts import HarborGames, trained_turns
from ._passk import task_pass_at_k
from ._recipe_run import RecipeRun
from ._report import plot_training, write_summary
from ._rollout_setup import GamesFailed
from ._sections import OutputSection
from ._training import ModelSection, load_model

__all__ = ["AttemptSection", "EvalSection", "GrpoHarnessConfig", "OutputSection", "main", "run"]

console = Console()
LABELS = {"untrained": "untrained", "grpo": "after GRPO"}
#: The harnesses this recipe drives besides the installed agent CLIs (``openenv-train agents list``).
OWN_HARNESSES = {"model": "our own chat loop with a bash tool (harbor's --agent model)"}
EXAMPLES = Path(__file__).resolve().parents[1] / "harbor" / "examples"


@dataclass
class AttemptSection:
    """How one attempt of the harness on a task runs."""

    backend: str = "sandbox"
    """Task environments: ``sandbox`` (the OS sandbox, offline), ``docker`` (needs an engine) or ``auto``."""
    concurrency: int = 8
    """Attempts running at once (each its own task environment and agent process)."""
    agent_timeout_s: float | None = None
    """Overrides every task's ``[agent] timeout_sec``; null keeps the tasks' own."""
    max_turns: int = 8
    """Model calls per attempt of the ``model`` harness (the row is truncated after them)."""
    side_calls: str = "masked"
    """Calls off the main line of an attempt's call graph (titles, summaries, subagent branches): ``masked``
    (kept in the traces, not trained) or ``trained`` (each its own row with the attempt's advantage)."""
    agent_args: list[str] = field(default_factory=list)
    """More command-line arguments of an installed agent CLI (e.g. ``[--max-turns, "8"]`` for Claude Code)."""
    agent_env: dict[str, str] = field(default_factory=dict)
    """More environment variables of an installed agent CLI."""
    choices: list[str] = field(default_factory=list)
    """Replies the served model is restricted to (the endpoint's ``guided_choice``): a scripted policy whose
    replies the model samples and the trainer scores, e.g. tool calls in the model's format and an end; empty:
    free replies (a real model)."""

    def __post_init__(self) -> None:
        if self.backend not in ("sandbox", "docker", "auto"):
            raise ValueError(f"attempt.backend must be sandbox, docker or auto, got {self.backend!r}")
        if self.side_calls not in ("masked", "trained"):
            raise ValueError(f"attempt.side_calls must be masked or trained, got {self.side_calls!r}")
        if self.concurrency < 1 or self.max_turns < 1:
            raise ValueError("attempt.concurrency and attempt.max_turns must be >= 1")


@dataclass
class EvalSection:
    """Attempts on every task before and after GRPO."""

    attempts: int = 4
    """Attempts per task; a task's pass rate is the share of them the verifier passes."""
    temperature: float = 1.0
    """Sampling temperature of the evaluations (the policy GRPO trains)."""
    success_threshold: float = 1.0
    """An attempt passes when the verifier's reward is at least this."""
    bootstrap_resamples: int = 2000
    """Resamples of the bootstrap intervals (over tasks)."""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"eval.attempts must be >= 1, got {self.attempts}")


def _default_grpo() -> GRPOSection:
    # attempts are long: the next step's run while the optimizer steps (overlap); each call is a row of its own,
    # so max_completion_length bounds one call's reply
    return GRPOSection(budget_s=None, steps=20, prompts_per_step=2, num_generations=4, learning_rate=1e-4,
                       max_completion_length=512, per_turn_tokens=512, save_steps=10, overlap=True)


@dataclass
class GrpoHarnessConfig:
    """Every setting of the recipe; ``section.key=value`` overrides any of them."""

    seed: int = 0
    """Seed of the trainer (and of the tiny model's initial weights through ``model.init_seed``)."""
    show_progress: bool = True
    """Live progress lines on the console."""
    verbose: bool = False
    """Also print the trainer's per-step dictionaries (they always go to ``metrics.jsonl``)."""
    harness: str = "model"
    """The agent harness that works on the tasks: ``model`` (our chat loop with a bash tool), or an installed agent
    CLI (``claude-code``, ``codex``, ``opencode``, ``gemini-cli``, ``qwen-code``, ``mini-swe-agent``:
    ``openenv-train agents install NAME``)."""
    tasks: str | None = None
    """A Harbor task folder, or a folder of them; null: the built-in examples (``openenv_train/harbor/examples``)."""
    attempt: AttemptSection = field(default_factory=AttemptSection)
    model: ModelSection = field(default_factory=lambda: ModelSection(max_context=32768, init_range=0.1))
    """The policy; a harness's prompts are long (its instructions and tools: Claude Code's ~21k characters are as
    many of the tiny model's tokens), hence the tiny model's context."""
    grpo: GRPOSection = field(default_factory=_default_grpo)
    eval: EvalSection = field(default_factory=EvalSection)
    output: OutputSection = field(default_factory=OutputSection)

    @property
    def run_name(self) -> str:
        """The run folder's name."""
        return self.output.name or f"grpo-harness-{self.harness}"

    def __post_init__(self) -> None:
        from ..harbor import AGENT_SPECS

        names = [*OWN_HARNESSES, *AGENT_SPECS]
        if self.harness not in names:
            raise ValueError(f"harness must be one of {', '.join(names)}, got {self.harness!r}")
        if self.grpo.credit != "episode":
            raise ValueError(f"grpo.credit={self.grpo.credit!r}: the verifier scores whole attempts; use "
                             "grpo.credit=episode")


def find_task_folders(tasks: str | None) -> dict[str, Path]:
    """Task name -> folder, for every Harbor task under ``tasks`` (None: the built-in examples).

    Raises:
        ValueError: no task there (the message names the path).
    """
    from ..harbor import find_tasks

    try:
        found = find_tasks([tasks or EXAMPLES])
    except FileNotFoundError as exc:
        raise ValueError(f"tasks={tasks}: {exc}") from None
    return {path.name: path for path in found}


def make_agent(cfg: GrpoHarnessConfig, base_url: str) -> Any:
    """The harness, its model calls going to ``base_url`` (the capturing endpoint).

    Raises:
        AgentNotInstalled: an agent CLI is not in the agent cache (the message names the install command).
    """
    from ..harbor import InstalledAgent, ModelAgent

    if cfg.harness == "model":
        return ModelAgent(base_url=base_url, max_turns=cfg.attempt.max_turns, temperature=cfg.grpo.temperature,
                          max_tokens=cfg.grpo.per_turn_tokens)
    agent = InstalledAgent(cfg.harness, base_url, args=list(cfg.attempt.agent_args), env=dict(cfg.attempt.agent_env))
    agent.check()
    return agent


def _attempt_metrics(threshold: float) -> Any:
    def metrics(row: Any) -> dict[str, float]:
        reward = float(row.reward or 0.0)
        main = row.trace.call_graph().main
        return {"reward": reward, "win": float(reward >= threshold), "calls": float(len(row.trace.turns)),
                "main_line_calls": float(len(main.node_ids) if main is not None else 0),
                "failed": float(not row.ok)}

    return metrics


def _evaluate(rec: RecipeRun, games: HarborGames, tasks: dict[str, Path], model: Any, tokenizer: Any,
              cfg: GrpoHarnessConfig, phase: str) -> None:
    """``eval.attempts`` attempts per task; per task the pass rate, mean reward and pass@k."""
    from ..policy import FixedSampling, LocalBackend
    from ..pool import EpisodeSpec

    model.eval()
    backend = FixedSampling(LocalBackend(model, tokenizer), temperature=cfg.eval.temperature,
                            max_tokens=cfg.grpo.per_turn_tokens)
    n = cfg.eval.attempts
    specs = [EpisodeSpec(f"eval-{phase}-{name}-{k}", {"task": name}, 0, f"eval-{phase}-{name}")
             for name in tasks for k in range(n)]
    per_attempt = _attempt_metrics(cfg.eval.success_threshold)

    def per_task(rows: list[Any]) -> list[Mapping[str, float]]:
        out: list[Mapping[str, float]] = []
        for i in range(0, len(rows), n):
            values = [per_attempt(r) for r in rows[i:i + n]]
            wins = [v["win"] > 0 for v in values]
            out.append({"pass_rate": sum(wins) / n, "reward": sum(v["reward"] for v in values) / n,
                        **{k: v for k, v in task_pass_at_k(wins).items() if k.startswith("pass@") and k != "pass@1"},
                        "calls": sum(v["calls"] for v in values) / n})
        return out

    def report(result: dict[str, Any], count: int) -> str:
        m = result["metrics"]["pass_rate"]
        return (f"[bold]{LABELS[phase]}[/] ({count} attempts, {len(tasks)} tasks): pass rate {m['mean']:.3f} "
                f"[{m['ci_low']:.3f}, {m['ci_high']:.3f}]")

    rec.evaluate(phase, LABELS[phase], lambda: games.play_specs(backend, specs), per_attempt,
                 resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed, report=report, per_task=per_task)


def run(cfg: GrpoHarnessConfig, *, resume: bool = False) -> dict[str, Any]:
    """Run (or resume) the recipe; returns the summary written to ``summary.json``."""
    from ..harbor import HarborRunConfig

    out = Path(cfg.output.dir) / cfg.run_name
    tasks = find_task_folders(cfg.tasks)
    rec = RecipeRun.open(out, config_to_dict(cfg), resume=resume, console=console, phases=5)
    started = time.perf_counter()
    harbor = HarborRunConfig(backend=cfg.attempt.backend, run_id=cfg.run_name,  # type: ignore[arg-type]
                             agent_timeout_s=cfg.attempt.agent_timeout_s)
    games = None
    try:
        with rec.phase("tasks, capturing policy endpoint and model", 1):
            games = HarborGames(out, tasks, partial(make_agent, cfg), harbor, concurrency=cfg.attempt.concurrency,
                                choices=cfg.attempt.choices)
            model, tokenizer = load_model(cfg.model, out / "checkpoints" / "init")
            console.print(f"{cfg.harness} on {len(tasks)} task(s) ({', '.join(tasks)}): "
                          f"{sum(p.numel() for p in model.parameters()):,}-parameter policy, "
                          f"{cfg.attempt.concurrency} attempts at once")
        with rec.phase("baseline: the untrained policy on every task", 2):
            _evaluate(rec, games, tasks, model, tokenizer, cfg, "untrained")
        with rec.phase("GRPO on the harness's attempts", 3):
            names = list(tasks)
            count = cfg.grpo.steps * cfg.grpo.prompts_per_step
            prompts = [{"task": names[i % len(names)]} for i in range(count)]
            grpo = partial(train_grpo, model, tokenizer, games, prompts, cfg.grpo, out, metrics=rec.metrics,
                           reward_weights={"verifier": 1.0},
                           row_metrics=_attempt_metrics(cfg.eval.success_threshold), turn_rows=True, seed=cfg.seed,
                           show_progress=cfg.show_progress, verbose=cfg.verbose,
                           rollout_options={"trained_turns": trained_turns(cfg.attempt.side_calls),
                                            "serve": games.serve})
            model = rec.train("grpo", out / "checkpoints" / "final", model, grpo, enabled=cfg.grpo.enabled,
                              setting="grpo.enabled")
        with rec.phase("the trained policy on the same tasks", 4):
            _evaluate(rec, games, tasks, model, tokenizer, cfg, "grpo")
    finally:
        if games is not None:
            games.close()
    with rec.phase("summary", 5):
        return _summary(rec, cfg, list(tasks), started)


def _summary(rec: RecipeRun, cfg: GrpoHarnessConfig, names: list[str], started: float) -> dict[str, Any]:
    """``summary.json``/``.md`` and ``training.png``: pass rates per phase and per task, the paired difference."""
    out, evals = rec.out, rec.state.data["evals"]
    before, after = (evals.get(p, {}).get("per_task", {}).get("pass_rate") for p in ("untrained", "grpo"))
    table = [{"task": name, "before": before[i], **({"after": after[i], "difference": after[i] - before[i]}
                                                     if after else {})}
             for i, name in enumerate(names)] if before else []
    extra: dict[str, Any] = {"title": f"GRPO on the {cfg.harness} harness's attempts", "run": str(out),
                             "tasks_path": cfg.tasks or str(EXAMPLES), "attempts_per_task": cfg.eval.attempts,
                             "success": f"reward >= {cfg.eval.success_threshold:g}",
                             "side_calls": cfg.attempt.side_calls, "overlap": cfg.grpo.overlap,
                             "budgets": rec.state.data.get("budgets", {}),
                             "seconds_this_session": round(time.perf_counter() - started, 1), "tasks": table,
                             "config": config_to_dict(cfg)}
    summary = write_summary(out, evals, order=["untrained", "grpo"], metric="pass_rate", labels=LABELS, extra=extra,
                            resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed)
    plot_training(rec.metrics.read(), out / "training.png", evals=evals, labels=LABELS)
    console.print((out / "summary.md").read_text())
    return summary


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    from ..harbor import AgentNotInstalled

    return recipe_main(GrpoHarnessConfig, run, argv, module="openenv_train.recipes.grpo_harness",
                       doc=__doc__, example="harness=model tasks=PATH", errors=(GamesFailed, AgentNotInstalled))


if __name__ == "__main__":
    raise SystemExit(main())
