"""Train a model to play Wordle, offline, end to end: teacher games (SFT), then GRPO on a Ray rollout pool.

    python -m openenv_train.recipes.grpo_wordle [--config configs/grpo_wordle.yaml] [section.key=value ...]
    python -m openenv_train.recipes.grpo_wordle --resume runs/grpo-wordle

1. Wordle env servers (sandboxed local processes, or ``--env-url``) and a Ray rollout pool.
2. The tiny offline model (character tokens; or ``--model PATH_OR_ID``).
3. Baseline: the untrained policy on a fixed set of held-out secrets (greedy).
4. Warm start: SFT on games of a teacher: a fixed opening, then random answer words consistent with all marks.
5. GRPO through the pool (TRL ``rollout_func``): every model call is captured into the run's traces.
6. The held-out secrets after SFT and after GRPO, letter-greedy and by beam search (``eval.beam_width``), and after
   GRPO without the decoding constraint.
7. ``runs/<name>/``: traces (Parquet), checkpoints, ``metrics.jsonl``, ``training.png``, ``summary.md``/``.json``.

Each training phase has a wall-time budget (``sft.budget_s``, ``grpo.budget_s``) and stops cleanly at it.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
import warnings
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from ..core import REMOVED_IN, OpenEnvTrainDeprecationWarning
from ..pool import PoolConfig
from ._config import load_run_config
from ._grpo_phase import train_grpo
from ._recipe_run import RecipeRun
from ._report import plot_training, write_summary
from ._rollout_setup import GamesFailed
from ._sections import OutputSection, recipe_pool
from ._stats import paired_difference
from ._training import load_model, quiet_libraries, train_sft_in_budget
from .wordle import (
    REWARD_RUBRIC,
    EnvSection,
    GrpoWordleConfig,
    TeacherSection,
    WordleAgent,
    WordleEvalSection,
    WordleGames,
    WordleGRPOSection,
    consistency_turn_rewards,
    explored_turns,
    game_metrics,
    teacher_dataset,
    unseen_held_out,
)

__all__ = ["EnvSection", "GamesFailed", "GrpoWordleConfig", "OutputSection", "PoolSection", "TeacherSection",
           "WordleAgent", "WordleEvalSection", "WordleGRPOSection", "main", "recipe_pool", "run"]

#: Former names of the Wordle sections here, before the shared GRPO section and the general recipe's
#: ``EvalSection`` kept the plain names.
_RENAMED = {"GRPOSection": "WordleGRPOSection", "EvalSection": "WordleEvalSection"}


def __getattr__(name: str) -> Any:
    if name not in _RENAMED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new = _RENAMED[name]
    warnings.warn(f"{__name__}.{name} is now openenv_train.recipes.wordle.{new}; import it from there ({__name__}."
                  f"{name} goes away in openenv-train {REMOVED_IN})", OpenEnvTrainDeprecationWarning, stacklevel=2)
    return globals()[new]


def PoolSection(**fields: Any) -> PoolConfig:  # noqa: N802 (the section's former class name)
    """Deprecated: the ``pool`` section is a :class:`~openenv_train.pool.PoolConfig`; use :func:`recipe_pool`."""
    warnings.warn("PoolSection is deprecated and will be removed in the next release: the pool section is a "
                  "PoolConfig; use recipe_pool(**fields) for one with the recipe's defaults", OpenEnvTrainDeprecationWarning,
                  stacklevel=2)
    return recipe_pool(**fields)


console = Console()
logger = logging.getLogger(__name__)
LABELS = {"untrained": "untrained", "sft": "after SFT", "grpo": "after GRPO",
          "grpo_unconstrained": "after GRPO, unconstrained", "sft_beam": "after SFT, beam",
          "grpo_beam": "after GRPO, beam"}
#: The letter-greedy phase each beam-search phase plays the same games as.
BEAM_OF = {"sft_beam": "sft", "grpo_beam": "grpo"}


def run(cfg: GrpoWordleConfig, *, resume: bool = False) -> dict[str, Any]:
    """Run (or resume) the recipe; returns the summary written to ``summary.json``."""
    out = Path(cfg.output.dir) / cfg.run_name
    rec = RecipeRun.open(out, cfg.as_dict(), resume=resume, console=console, phases=7)
    held, sft_words, grpo_words = cfg.secret_splits()
    started = time.perf_counter()
    games = None
    try:
        with rec.phase("env servers and rollout pool", 1):
            games = WordleGames(cfg, out)
            console.print(f"pool: {cfg.pool.num_actors} actors x {cfg.pool.sessions_per_actor} sessions on "
                          f"{cfg.env.url or 'wordle'} (sandboxed: {games.pool.config.sandbox}); policy endpoint "
                          f"{games.server.base_url}; decoding constraint: "
                          f"{'valid guesses not made before' if cfg.constrained else 'none'}"
                          f"{'; letters written in any order' if cfg.order == 'any' else ''}")
        with rec.phase("model", 2):
            model, tokenizer = load_model(cfg.model, out / "checkpoints" / "init")
            console.print(f"{sum(p.numel() for p in model.parameters()):,} parameters "
                          f"({cfg.model.path or f'tiny offline model, {cfg.model.tokenizer} tokens'})")
        with rec.phase("baseline: the untrained policy on held-out secrets", 3):
            _evaluate(rec, games, model, tokenizer, held, "untrained", cfg, constrained=cfg.constrained)
        with rec.phase("warm start: teacher games, then SFT", 4):
            sft = partial(_sft, model, tokenizer, sft_words, cfg, rec)
            model = rec.train("sft", out / "checkpoints" / "sft", model, sft, enabled=cfg.sft.enabled,
                              setting="sft.enabled")
            if cfg.sft.enabled:
                _evaluate(rec, games, model, tokenizer, held, "sft", cfg, constrained=cfg.constrained)
                if cfg.eval.beam_width:
                    _evaluate(rec, games, model, tokenizer, held, "sft_beam", cfg, constrained=cfg.constrained)
        with rec.phase("GRPO through the rollout pool", 5):
            grpo = partial(_grpo, games, model, tokenizer, grpo_words, cfg, rec)
            model = rec.train("grpo", out / "checkpoints" / "final", model, grpo, enabled=cfg.grpo.enabled,
                              setting="grpo.enabled")
        with rec.phase("evaluation after GRPO", 6):
            if cfg.grpo.enabled:
                _evaluate(rec, games, model, tokenizer, held, "grpo", cfg, constrained=cfg.constrained)
                if cfg.eval.beam_width:
                    _evaluate(rec, games, model, tokenizer, held, "grpo_beam", cfg, constrained=cfg.constrained)
                if cfg.constrained and cfg.eval.unconstrained:
                    _evaluate(rec, games, model, tokenizer, held, "grpo_unconstrained", cfg, constrained=False)
    finally:
        if games is not None:
            games.close()
    with rec.phase("summary", 7):
        return _summary(rec, cfg, held, sft_words, started)


def _evaluate(rec: RecipeRun, games: WordleGames, model: Any, tokenizer: Any, words: Sequence[str], phase: str,
              cfg: GrpoWordleConfig, *, constrained: bool) -> dict[str, Any]:
    """Games on the held-out ``words``, letter-greedy (a ``*_beam`` phase: each guess the best of an
    ``eval.beam_width`` beam search): win rate, reward, guesses when won, invalid and consistent guesses."""
    from ..policy import FixedSampling, LocalBackend

    beam: dict[str, Any] = {"use_beam_search": True, "n": cfg.eval.beam_width} if phase in BEAM_OF else {}

    def play() -> Any:
        model.eval()
        backend = FixedSampling(LocalBackend(model, tokenizer), temperature=0.0,
                                max_tokens=cfg.grpo.per_turn_tokens, constrained=constrained, **beam)
        return games.play(backend, words, f"eval-{phase}")

    def extra(per_task: Sequence[Any]) -> dict[str, Any]:
        won = [t["guesses"] for t in per_task if t["win"]]
        return {"guesses_when_won": sum(won) / len(won) if won else None}

    def report(result: dict[str, Any], n: int) -> str:
        m = result["metrics"]
        return (f"[bold]{LABELS[phase]}[/] ({n} held-out secrets): win rate {m['win']['mean']:.2f} "
                f"[{m['win']['ci_low']:.2f}, {m['win']['ci_high']:.2f}], reward {m['reward']['mean']:.3f}, "
                f"guesses when won {result['guesses_when_won'] or 0:.2f}, invalid {m['invalid_rate']['mean']:.3f}, "
                f"consistent {m['consistent']['mean']:.2f}")

    return rec.evaluate(phase, LABELS[phase], play, game_metrics, resamples=cfg.eval.bootstrap_resamples,
                        seed=cfg.seed, report=report, extra=extra)


def _sft(model: Any, tokenizer: Any, secrets: Sequence[str], cfg: GrpoWordleConfig, rec: RecipeRun) -> tuple[Any, dict[str, Any]]:
    """SFT on teacher games: a fixed opening, then random answer words consistent with all marks so far (valid
    words once no answer fits)."""
    from ..envs.wordle import answers

    start = time.perf_counter()
    dataset, collator, trainer_class = teacher_dataset(
        tokenizer, secrets, opening=cfg.teacher.opening, system_prompt=cfg.env.system_prompt, distill=cfg.sft.distill,
        batch_size=cfg.sft.batch_size, seed=cfg.seed, order=cfg.order)
    opening = f"opening {', '.join(cfg.teacher.opening)}, then " if cfg.teacher.opening else ""
    known = set(answers())
    others = sum(1 for s in secrets if s not in known)
    console.print(f"{len(dataset)} teacher games in {time.perf_counter() - start:.1f}s ({opening}random answer words "
                  f"consistent with all marks so far; {len(set(secrets))} secrets, none held out, {others} games on "
                  f"valid guesses that are not answers); targets: "
                  f"{'the teacher next-letter distributions' if collator else 'the sampled words'}")
    return train_sft_in_budget(model, tokenizer, dataset, cfg.sft, rec.out / "checkpoints" / "sft", console=console,
                               metrics=rec.metrics, seed=cfg.seed, show_progress=cfg.show_progress,
                               verbose=cfg.verbose, collator=collator, trainer_class=trainer_class, unit="games")


def _grpo(games: WordleGames, model: Any, tokenizer: Any, words: Sequence[str], cfg: GrpoWordleConfig,
          rec: RecipeRun) -> tuple[Any, dict[str, Any]]:
    """GRPO through the rollout pool on the training secrets, rewarded by the Wordle rubric."""
    from ..rubrics import get_rubric

    return train_grpo(model, tokenizer, games, [{"task": w} for w in words], cfg.grpo, rec.out, metrics=rec.metrics,
                      reward_weights=cfg.grpo.reward_weights, rubric=get_rubric(REWARD_RUBRIC),
                      row_metrics=game_metrics, turn_rewards=_turn_rewards(cfg), seed=cfg.seed,
                      show_progress=cfg.show_progress, verbose=cfg.verbose)


def _turn_rewards(cfg: GrpoWordleConfig) -> Any:
    """The GRPO turn scores of ``grpo.credit``: under ``turn``, whether each guess after the opening fits every
    earlier mark; under ``branch``, which move each game explored."""
    plan = cfg.branch_plan()
    if plan is not None:
        return explored_turns(plan)
    return consistency_turn_rewards(len(cfg.teacher.opening)) if cfg.grpo.credit == "turn" else None


def _summary(rec: RecipeRun, cfg: GrpoWordleConfig, held: Sequence[str], sft_words: Sequence[str],
             started: float) -> dict[str, Any]:
    """``summary.json``/``.md`` and ``training.png``: win rates per phase, their differences, the unseen words."""
    out, evals = rec.out, rec.state.data["evals"]
    constraint = "guided_choice: valid guesses not made before" + ("; guided_choice_order: any" if cfg.order == "any"
                                                                   else "")
    extra = {"title": "GRPO Wordle", "run": str(out), "held_out_secrets": len(held),
             "decoding_constraint": constraint if cfg.constrained else None,
             "guesses_when_won": {p: r.get("guesses_when_won") for p, r in evals.items()},
             "budgets": rec.state.data.get("budgets", {}),
             "seconds_this_session": round(time.perf_counter() - started, 1), "config": cfg.as_dict()}
    if cfg.eval.beam_width:
        extra["beam"] = _beam_figures(evals, cfg)
    extra["unseen_held_out"] = unseen_held_out(out, held, sft_words if cfg.sft.enabled else (), cfg.teacher.opening,
                                               evals, resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed)
    summary = write_summary(out, evals, order=["untrained", "sft", "grpo"], metric="win", labels=LABELS,
                            extra=extra, resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed,
                            also=[*BEAM_OF, "grpo_unconstrained"])
    plot_training(rec.metrics.read(), out / "training.png", evals=evals, labels=LABELS)
    console.print((out / "summary.md").read_text())
    console.print(f"wrote {out}: traces/, checkpoints/, metrics.jsonl, training.png, summary.md, summary.json")
    return summary


def _beam_figures(evals: dict[str, Any], cfg: GrpoWordleConfig) -> dict[str, Any]:
    """The beam's win rate beside the letter-greedy one on the same games (paired difference per phase), and
    GRPO's effect on each (paired: after GRPO minus after SFT)."""
    def paired(after: str, before: str) -> dict[str, float] | None:
        if after not in evals or before not in evals:
            return None
        return paired_difference(evals[after]["per_task"]["win"], evals[before]["per_task"]["win"],
                                 resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed)

    return {"width": cfg.eval.beam_width,
            "beam_minus_greedy": {greedy: paired(beam, greedy) for beam, greedy in BEAM_OF.items()},
            "grpo_effect": {"greedy": paired("grpo", "sft"), "beam": paired("grpo_beam", "sft_beam")}}


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
