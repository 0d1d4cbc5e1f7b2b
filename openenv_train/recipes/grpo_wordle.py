"""Train a model to play Wordle, offline, end to end: teacher games (SFT), then GRPO on a Ray rollout pool.

    python -m openenv_train.recipes.grpo_wordle [--config configs/grpo_wordle.yaml] [section.key=value ...]
    python -m openenv_train.recipes.grpo_wordle --resume runs/grpo-wordle

1. Wordle env servers (sandboxed local processes, or ``--env-url``) and a Ray rollout pool.
2. The tiny offline model (character tokens; or ``--model PATH_OR_ID``).
3. Baseline: the untrained policy on a fixed set of held-out secrets (greedy).
4. Warm start: SFT on games of a teacher: a fixed opening, then random answer words consistent with all marks.
5. GRPO through the pool (TRL ``rollout_func``): every model call is captured into the run's traces.
6. The held-out secrets after SFT and after GRPO (and after GRPO without the decoding constraint).
7. ``runs/<name>/``: traces (Parquet), checkpoints, ``metrics.jsonl``, ``training.png``, ``summary.md``/``.json``.

Each training phase has a wall-time budget (``sft.budget_s``, ``grpo.budget_s``) and stops cleanly at it.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from ._budget import Budget, PhaseLine, budget_callback
from ._config import load_run_config
from ._rollout_setup import GamesFailed, WordleGames, check_games
from ._grpo import train_grpo
from ._report import MetricsLog, phase_summary, plot_training, write_summary
from ._run_state import RunState
from ._training import load_model, quiet_libraries, train_sft
from ._wordle import WordleAgent
from ._wordle_config import (
    REWARD_RUBRIC,
    EnvSection,
    EvalSection,
    GRPOSection,
    GrpoWordleConfig,
    OutputSection,
    PoolSection,
    TeacherSection,
    recipe_pool,
)

__all__ = ["EnvSection", "EvalSection", "GRPOSection", "GamesFailed", "GrpoWordleConfig", "OutputSection",
           "PoolSection", "TeacherSection", "WordleAgent", "main", "recipe_pool", "run"]

console = Console()
logger = logging.getLogger(__name__)
LABELS = {"untrained": "untrained", "sft": "after SFT", "grpo": "after GRPO",
          "grpo_unconstrained": "after GRPO, unconstrained"}


@contextmanager
def _phase(title: str, number: int) -> Iterator[None]:
    console.rule(f"[bold]{number}/7 {title}")
    start = time.perf_counter()
    yield
    console.print(f"[dim]{title}: {time.perf_counter() - start:.1f}s[/]")


def _evaluate(games: WordleGames, model: Any, tokenizer: Any, words: Sequence[str], phase: str, cfg: GrpoWordleConfig,
              state: RunState, metrics: MetricsLog, *, constrained: bool = True) -> dict[str, Any]:
    from ..policy import FixedSampling, LocalBackend
    from ._wordle import game_metrics

    if phase in state.data["evals"]:
        return state.data["evals"][phase]  # type: ignore[no-any-return]
    model.eval()
    backend = FixedSampling(LocalBackend(model, tokenizer), temperature=0.0, max_tokens=cfg.grpo.per_turn_tokens,
                            constrained=constrained)
    rows = games.play(backend, words, f"eval-{phase}")
    check_games(rows, f"the {LABELS[phase]} evaluation", Path(cfg.output.dir) / cfg.output.name)
    per_task = [game_metrics(row) for row in rows]
    result = phase_summary(per_task, resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed)
    won = [t["guesses"] for t in per_task if t["win"]]
    result["guesses_when_won"] = sum(won) / len(won) if won else None
    result["failed_episodes"] = sum(not row.ok for row in rows)
    metrics.write({"phase": f"eval_{phase}", **{k: v["mean"] for k, v in result["metrics"].items()}})
    m = result["metrics"]
    console.print(f"[bold]{LABELS[phase]}[/] ({len(rows)} held-out secrets): win rate {m['win']['mean']:.2f} "
                  f"[{m['win']['ci_low']:.2f}, {m['win']['ci_high']:.2f}], reward {m['reward']['mean']:.3f}, "
                  f"guesses when won {result['guesses_when_won'] or 0:.2f}, invalid {m['invalid_rate']['mean']:.3f}, "
                  f"consistent {m['consistent']['mean']:.2f}")
    state.finish(f"eval_{phase}", evals={**state.data["evals"], phase: result})
    return result


def _teacher_data(tokenizer: Any, secrets: Sequence[str], cfg: GrpoWordleConfig) -> tuple[Any, Any, Any]:
    """Teacher games on ``secrets`` (never a held-out word) as (dataset, collator, trainer class): the teacher's
    next-letter distributions for a character tokenizer, else the sampled conversations (TRL renders them)."""
    import datasets

    from ..envs.wordle import answers
    from ..policy import is_char_tokenizer
    from ._distill import DistillCollator, distill_trainer, games_dataset
    from ._teacher import ConsistentTeacher
    from ._wordle import teacher_conversation

    teacher = ConsistentTeacher(answers(), cfg.teacher.opening)  # held-out words may be guessed, never be secrets
    rng = random.Random(cfg.seed)
    games = [teacher.play(secret, rng) for secret in secrets]
    if cfg.sft.distill and is_char_tokenizer(tokenizer):
        collator = DistillCollator(tokenizer, teacher, cfg.env.system_prompt)
        return games_dataset(games, cfg.sft.batch_size, cfg.seed), collator, distill_trainer()
    chats = [teacher_conversation(game, cfg.env.system_prompt) for game in games]
    return datasets.Dataset.from_dict({"messages": chats}), None, None


def _sft(model: Any, tokenizer: Any, secrets: Sequence[str], cfg: GrpoWordleConfig, out: Path, state: RunState,
         metrics: MetricsLog) -> Any:
    start = time.perf_counter()
    dataset, collator, trainer_class = _teacher_data(tokenizer, secrets, cfg)
    opening = f"opening {', '.join(cfg.teacher.opening)}, then " if cfg.teacher.opening else ""
    console.print(f"{len(dataset)} teacher games in {time.perf_counter() - start:.1f}s ({opening}random answer words "
                  f"consistent with all marks so far; {len(set(secrets))} secrets, none held out); targets: "
                  f"{'the teacher next-letter distributions' if collator else 'the sampled words'}")
    budget = Budget(cfg.sft.budget_s or 1e9)
    line = PhaseLine(console, "SFT", budget, {"loss": "loss", "learning_rate": "lr"})
    with line if cfg.show_progress else _nothing():
        model = train_sft(model, tokenizer, dataset, cfg.sft, out / "checkpoints" / "sft", metrics=metrics,
                          seed=cfg.seed, show_progress=cfg.show_progress, verbose=cfg.verbose,
                          callbacks=[budget_callback(budget, line)], budget=budget if cfg.sft.budget_s else None,
                          collator=collator, trainer_class=trainer_class)
    console.print(f"SFT: {line.step} steps ({line.step * cfg.sft.batch_size} games) in {budget.elapsed:.0f}s"
                  + (f" [yellow]cut short by sft.budget_s={cfg.sft.budget_s:g}[/]" if budget.cut_short else ""))
    state.finish("sft", budgets={**state.data.get("budgets", {}),
                                 "sft": {"steps": line.step, "seconds": round(budget.elapsed, 1),
                                         "budget_s": cfg.sft.budget_s, "cut_short": budget.cut_short}})
    return model


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _grpo(games: WordleGames, model: Any, tokenizer: Any, words: Sequence[str], cfg: GrpoWordleConfig, out: Path,
          state: RunState, metrics: MetricsLog) -> Any:
    from ..rubrics import get_rubric
    from ._wordle import game_metrics

    model, record = train_grpo(model, tokenizer, games, [{"task": w} for w in words], cfg.grpo, out, metrics=metrics,
                               reward_weights=cfg.grpo.reward_weights, rubric=get_rubric(REWARD_RUBRIC),
                               row_metrics=game_metrics, seed=cfg.seed, show_progress=cfg.show_progress,
                               verbose=cfg.verbose)
    state.finish("grpo", budgets={**state.data.get("budgets", {}), "grpo": record})
    return model


def run(cfg: GrpoWordleConfig, *, resume: bool = False) -> dict[str, Any]:
    """Run (or resume) the recipe; returns the summary written to ``summary.json``."""
    from transformers import AutoModelForCausalLM

    out = Path(cfg.output.dir) / cfg.output.name
    if not resume and (out / "state.json").exists():
        raise ValueError(f"{out} holds a run already: resume it with --resume {out}, or choose another "
                         "output.name")
    out.mkdir(parents=True, exist_ok=True)
    _check_writable(out)
    (out / "config.yaml").write_text(yaml.safe_dump(cfg.as_dict(), sort_keys=False))
    state, metrics = RunState(out / "state.json"), MetricsLog(out / "metrics.jsonl")
    held, sft_words, grpo_words = cfg.secret_splits()
    started = time.perf_counter()
    games = None
    try:
        with _phase("env servers and rollout pool", 1):
            games = WordleGames(cfg, out)
            console.print(f"pool: {cfg.pool.num_actors} actors x {cfg.pool.sessions_per_actor} sessions on "
                          f"{cfg.env.url or 'wordle'} (sandboxed: {games.pool.config.sandbox}); policy endpoint "
                          f"{games.server.base_url}; decoding constraint: "
                          f"{'valid guesses not made before' if cfg.constrained else 'none'}")
        with _phase("model", 2):
            model, tokenizer = load_model(cfg.model, out / "checkpoints" / "init")
            console.print(f"{sum(p.numel() for p in model.parameters()):,} parameters "
                          f"({cfg.model.path or f'tiny offline model, {cfg.model.tokenizer} tokens'})")
        with _phase("baseline: the untrained policy on held-out secrets", 3):
            _evaluate(games, model, tokenizer, held, "untrained", cfg, state, metrics, constrained=cfg.constrained)
        sft_dir = out / "checkpoints" / "sft"
        with _phase("warm start: teacher games, then SFT", 4):
            if not cfg.sft.enabled:
                console.print("sft.enabled is false: skipped")
            elif state.done("sft"):
                model = AutoModelForCausalLM.from_pretrained(sft_dir)
                console.print(f"done before: loaded {sft_dir}")
            else:
                model = _sft(model, tokenizer, sft_words, cfg, out, state, metrics)
            if cfg.sft.enabled:
                _evaluate(games, model, tokenizer, held, "sft", cfg, state, metrics, constrained=cfg.constrained)
        with _phase("GRPO through the rollout pool", 5):
            final = out / "checkpoints" / "final"
            if not cfg.grpo.enabled:
                console.print("grpo.enabled is false: skipped")
            elif state.done("grpo"):
                model = AutoModelForCausalLM.from_pretrained(final)
                console.print(f"done before: loaded {final}")
            else:
                model = _grpo(games, model, tokenizer, grpo_words, cfg, out, state, metrics)
        with _phase("evaluation after GRPO (after SFT: end of step 4)", 6):
            if cfg.grpo.enabled:
                _evaluate(games, model, tokenizer, held, "grpo", cfg, state, metrics, constrained=cfg.constrained)
                if cfg.constrained and cfg.eval.unconstrained:
                    _evaluate(games, model, tokenizer, held, "grpo_unconstrained", cfg, state, metrics,
                              constrained=False)
    finally:
        if games is not None:
            games.close()
    with _phase("summary", 7):
        evals = state.data["evals"]
        extra = {"title": "GRPO Wordle", "run": str(out), "held_out_secrets": len(held),
                 "decoding_constraint": "guided_choice: valid guesses not made before" if cfg.constrained else None,
                 "guesses_when_won": {p: r.get("guesses_when_won") for p, r in evals.items()},
                 "budgets": state.data.get("budgets", {}),
                 "seconds_this_session": round(time.perf_counter() - started, 1), "config": cfg.as_dict()}
        extra["unseen_held_out"] = _unseen(out, held, sft_words, cfg, evals)
        summary = write_summary(out, evals, order=["untrained", "sft", "grpo"], metric="win", labels=LABELS,
                                extra=extra, resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed,
                                also=["grpo_unconstrained"])
        plot_training(metrics.read(), out / "training.png", evals=evals, labels=LABELS)
        console.print((out / "summary.md").read_text())
        console.print(f"wrote {out}: traces/, checkpoints/, metrics.jsonl, training.png, summary.md, summary.json")
    return summary


def _unseen(out: Path, held: Sequence[str], sft_words: Sequence[str], cfg: GrpoWordleConfig,
            evals: dict[str, Any]) -> dict[str, Any]:
    """Win rates on the held-out words that no training game showed at all (no secret, guess or target)."""
    from ..trace import iter_traces
    from ._coverage import guessed_words, unseen_words
    from ._stats import bootstrap_ci, paired_difference

    grpo_rows = (r for r in iter_traces(out) if r.episode_id.startswith("grpo-"))
    words = unseen_words(held, sft_words if cfg.sft.enabled else (), cfg.teacher.opening, guessed_words(grpo_rows))
    at = [held.index(w) for w in words]
    kw = {"resamples": cfg.eval.bootstrap_resamples, "seed": cfg.seed}
    wins = {p: [r["per_task"]["win"][i] for i in at] for p, r in evals.items()}
    result: dict[str, Any] = {"words": len(words), "win": {p: bootstrap_ci(w, **kw) for p, w in wins.items() if w}}
    if words and "sft" in wins and "grpo" in wins:
        result["sft->grpo"] = paired_difference(wins["grpo"], wins["sft"], **kw)
    return result


def _check_writable(out: Path) -> None:
    probe = out / ".write-probe"
    try:
        probe.write_bytes(b"x" * 4096)
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"cannot write the run to {out}: {exc}; choose another output.dir or free space") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m openenv_train.recipes.grpo_wordle",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--config", help="YAML file of settings (default: the embedded defaults)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue this run from its last finished phase, "
                        "GRPO checkpoint and trace shard (its config.yaml is reused)")
    parser.add_argument("--env-url", help="a running OpenEnv-compatible Wordle server (env.url)")
    parser.add_argument("--ray-address", help="an existing Ray cluster (pool.ray_address)")
    parser.add_argument("--model", help="a checkpoint folder or Hub id instead of the tiny model (model.path)")
    parser.add_argument("--use-vllm", action="store_true", help="generate with a trl vllm-serve server (GPU)")
    parser.add_argument("--unsloth", action="store_true", help="load the model with Unsloth (GPU)")
    parser.add_argument("--name", help="run name (output.name)")
    parser.add_argument("--verbose", action="store_true", help="also print the trainers' per-step logs")
    parser.add_argument("overrides", nargs="*", help="section.key=value settings, e.g. grpo.steps=10 sft.epochs=2")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    overrides = list(args.overrides)
    flags = {"env.url": args.env_url, "pool.ray_address": args.ray_address, "model.path": args.model,
             "output.name": args.name, "grpo.use_vllm": "true" if args.use_vllm else None,
             "model.unsloth": "true" if args.unsloth else None, "verbose": "true" if args.verbose else None}
    overrides += [f"{k}={v}" for k, v in flags.items() if v is not None]
    cfg = load_run_config(GrpoWordleConfig, parser, args.config, overrides, args.resume)
    logging.basicConfig(level=logging.WARNING)
    quiet_libraries(cfg.verbose)
    try:
        summary = run(cfg, resume=bool(args.resume))
    except (ValueError, GamesFailed) as exc:
        console.print(f"[bold red]error:[/] {exc}")
        return 1
    console.print(f"improvement in win rate: {json.dumps(summary.get('improvement'))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
