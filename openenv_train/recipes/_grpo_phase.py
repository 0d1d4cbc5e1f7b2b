"""The GRPO phase the recipes share: TRL's ``GRPOTrainer`` over the rollout pool, with a wall-time budget.

Rollouts are played by the pool with the trainer's live model behind the capturing policy endpoint; the trainer
scores every token under the decoding constraint it was sampled with (:func:`~openenv_train.integrations.trl.
grpo_trainer_class`); checkpoints every ``save_steps`` steps, resumable after a stop.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from ._budget import Budget, PhaseLine, budget_callback, shown
from ._mix import EnvRewardScale, per_env_means
from ._report import MetricsLog
from ._rollout_setup import Games, check_games
from ._training import cpu_settings, log_callback, quiet_trainer

__all__ = ["GRPOSection", "MixTraining", "train_grpo", "training_note"]

console = Console()


@dataclass
class GRPOSection:
    """GRPO with TRL through the pool."""

    enabled: bool = True
    """Run the phase at all."""
    steps: int = 200
    """Most optimiser steps; the budget usually ends the phase first."""
    budget_s: float | None = 90.0
    """Wall-time limit of the phase: training stops cleanly at it (checkpoint and rows written); null: none."""
    prompts_per_step: int = 8
    """Tasks per step; each is played ``num_generations`` times (one group)."""
    num_generations: int = 8
    """Episodes per task; GRPO compares the episodes of a group."""
    learning_rate: float = 5e-5
    """AdamW learning rate, constant after ``warmup_steps``."""
    warmup_steps: int = 0
    """Steps over which the learning rate rises linearly from 0 (Adam's first steps move every weight by about the
    learning rate, whatever its gradient's size)."""
    beta: float = 0.0
    """KL weight to the reference (starting) model; 0 skips the reference model."""
    scale_rewards: str = "group"
    """What each advantage (reward minus its group's mean) is divided by (TRL's ``scale_rewards``): ``group``, the
    group's standard deviation (GRPO's); ``batch``, the whole step's; ``none`` (Dr. GRPO's)."""
    entropy_coef: float = 0.0
    """Weight of an entropy bonus on the sampled tokens (TRL's ``entropy_coef``; under a decoding constraint, the
    entropy of the constrained distribution); 0: none."""
    entropy_target: float | None = None
    """Adapt the bonus's weight each step (TRL's ``use_adaptive_entropy``): up by 0.005 while the mean token
    entropy is at or below this target, down otherwise; null: a fixed ``entropy_coef``."""
    credit: str = "episode"
    """How advantages reach tokens: ``episode`` (GRPO's: one per game against its group); ``turn`` (MT-GRPO: each
    turn's tokens also get ``turn_reward_weight`` times its turn reward against the group's at that turn);
    ``branch`` (each group's first game is greedy, every other game samples one move and decodes the rest greedily;
    that move gets the game's advantage over the greedy one). ``turn`` and ``branch`` need a recipe that scores
    turns (the Wordle recipe)."""
    turn_reward_weight: float = 1.0
    """Weight of the turn rewards under ``credit: turn``."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts (the loss scores tokens at the same temperature)."""
    top_p: float = 1.0
    """Nucleus sampling of the rollouts."""
    max_completion_length: int = 160
    """Tokens of one episode's joined completion (model and env tokens) that are trained on."""
    per_turn_tokens: int = 8
    """Tokens the model may write per turn."""
    save_steps: int = 10
    """Checkpoint every this many steps (and at the end)."""
    overlap: bool = False
    """Play the next step's games while this step trains (one step off-policy: each step trains on games begun
    with the previous step's weights; the loss's importance ratio is taken against the captured sampling logprobs,
    which corrects for the lag). Needs the model served from an engine process (a CPU model) and no ``use_vllm``."""
    use_vllm: bool = False
    """Generate with a ``trl vllm-serve`` server (GPU) that the trainer keeps in sync; see ``vllm_url``."""
    vllm_url: str = "http://127.0.0.1:8000"
    """The ``trl vllm-serve`` server of ``use_vllm``."""

    def __post_init__(self) -> None:
        if self.steps < 1 or self.prompts_per_step < 1:
            raise ValueError("grpo.steps and grpo.prompts_per_step must be >= 1")
        if self.num_generations < 2:
            raise ValueError(f"grpo.num_generations must be >= 2 (GRPO compares the episodes of a group), "
                             f"got {self.num_generations}")
        from ..integrations.trl import CREDITS

        if self.credit not in CREDITS:
            raise ValueError(f"grpo.credit must be one of {', '.join(CREDITS)}, got {self.credit!r}")
        if self.overlap and self.use_vllm:
            raise ValueError("grpo.overlap plays games with the trainer's own model; it cannot go with grpo.use_vllm "
                             "(set one of them to false)")
        if self.scale_rewards not in ("group", "batch", "none"):
            raise ValueError(f"grpo.scale_rewards must be group, batch or none, got {self.scale_rewards!r}")
        if self.warmup_steps < 0 or self.entropy_coef < 0:
            raise ValueError("grpo.warmup_steps and grpo.entropy_coef must be >= 0")
        if self.budget_s is not None and self.budget_s <= 0:
            raise ValueError(f"grpo.budget_s must be > 0 seconds or null, got {self.budget_s}")


@dataclass
class MixTraining:
    """What GRPO over a mix of envs adds: per-env metrics each step (``<env>/reward``, ``<env>/failed``,
    ``<env>/retries`` and ``mix/reward``, the mean over envs, in ``metrics.jsonl``; the reward of each env and their
    mean on the progress line), each env's per-call
    token limit standing on its requests (the endpoint's ``grpo.per_turn_tokens`` is the default) and, with
    ``normalise``, each env's rewards divided by its running scale (:class:`~openenv_train.recipes._mix.EnvRewardScale`)."""

    envs: Sequence[str]
    """The mix's env names, in order."""
    env_of: Callable[[Any], str]
    """The env name of a row (``MixedPool.env_of``)."""
    normalise: bool = True
    """Divide each env's rewards by its running standard deviation."""
    retries: Callable[[], Mapping[str, int]] | None = None
    """Each env's retried episodes so far (the pool's counters)."""


def train_grpo(model: Any, tokenizer: Any, games: Games | Any, prompts: Sequence[Mapping[str, Any]], g: GRPOSection,
               out: Path, *, metrics: MetricsLog, reward_weights: Mapping[str, float], rubric: Any = None,
               row_metrics: Callable[[Any], Mapping[str, float]] | None = None,
               turn_rewards: Callable[[Any], Sequence[float | None]] | None = None, turn_rows: bool = False,
               seed: int = 0, show_progress: bool = True, verbose: bool = False,
               mix: MixTraining | None = None,
               rollout_options: Mapping[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """Train ``model`` by GRPO on ``prompts`` (each a task's reset options; one per group, in order); returns the
    trained model (saved to ``out/checkpoints/final``) and the phase's budget record.

    Args:
        games: the pool, endpoint and writer that play the episodes (their rows are written as they come): a
            :class:`Games`, or anything with its ``pool`` (``run(specs)``), ``server`` and ``writer``.
        reward_weights: reward components (``env``, or a score of ``rubric``) and their weights.
        row_metrics: per-episode numbers whose means go to ``metrics.jsonl`` (phase ``grpo_rollout``) each step;
            default the env's reward.
        turn_rewards: a reward per model turn of an episode, for ``g.credit`` ``turn`` or ``branch`` (under
            ``branch``: 1.0 on the explored turn, None elsewhere; the agent asks for the other turns at temperature 0).
        turn_rows: train each model turn as a row of its own under its own prompt (an agent whose prompts do not
            extend the turns before them; see :func:`~openenv_train.integrations.trl.make_rollout_func`).
        mix: the envs of a mix, for per-env metrics and reward scales.
        rollout_options: more keyword arguments of :func:`~openenv_train.integrations.trl.make_rollout_func`
            (``trained_turns``, ``serve``, ``local``).
    """
    import datasets
    import torch
    from trl import GRPOConfig

    from ..integrations.trl import field_reward, grpo_trainer_class, make_rollout_func
    from ..policy import v1_url

    budget = Budget(g.budget_s or 1e9)
    shown_keys = {"win": "win", "reward": "reward", "consistent": "consistent", "frac_reward_zero_std": "flat groups"}
    if mix is not None:
        # the env rewards as paid and their mean over envs: the trainer's own "reward" log is after each env's scaling
        shown_keys = {"mix/reward": "mix", **{f"{env}/reward": env for env in mix.envs}, "frac_reward_zero_std": "flat"}
    line = PhaseLine(console, "GRPO", budget, shown_keys)
    scales = {name: EnvRewardScale() for name in reward_weights} if mix is not None and mix.normalise else {}
    # in a mix an env's own per-call token limit (MixEnv.max_tokens) rides on its requests: the endpoint lets it stand
    options = {**({"caller_sets": ("max_tokens",)} if mix is not None else {}), **dict(rollout_options or {})}
    rollout = make_rollout_func(games.pool, policy_server=games.server, rubric=rubric, per_turn_tokens=g.per_turn_tokens,
                                episode_prefix="grpo-", policy_url=v1_url(g.vllm_url) if g.use_vllm else None,
                                turn_rewards=turn_rewards if g.credit != "episode" else None,
                                agent_temperature=g.credit == "branch", overlap=g.overlap, turn_rows=turn_rows,
                                **options)
    per_row = row_metrics or (lambda row: {"reward": float(row.reward or 0.0)})

    def rollout_func(batch: list[Any], trainer: Any) -> dict[str, list[Any]]:
        fields = rollout(batch, trainer)
        check_games(rollout.last_rows, f"GRPO step {trainer.state.global_step + 1}", out)
        each = [per_row(row) for row in rollout.last_rows]
        means = {k: sum(m[k] for m in each) / len(each) for k in each[0]}
        lag = {"staleness": sum(rollout.last_staleness) / len(rollout.last_staleness)} if g.overlap else {}
        if mix is not None:
            envs = [mix.env_of(row) for row in rollout.last_rows]
            for name, scale in scales.items():  # the trainer's reward functions read these fields
                if f"reward_{name}" in fields:
                    fields[f"reward_{name}"] = scale.normalise(envs, fields[f"reward_{name}"])
            means.update(per_env_means(rollout.last_rows, mix.env_of, per_row))
            played = [means[f"{env}/reward"] for env in mix.envs if f"{env}/reward" in means]
            means["mix/reward"] = sum(played) / len(played)  # each env counted once, as in the summary
            means.update({f"{env}/retries": n for env, n in (mix.retries() if mix.retries else {}).items()})
            means.update({f"{env}/reward_scale": v for scale in scales.values() for env, v in scale.scales().items()})
        metrics.write({"phase": "grpo_rollout", "step": trainer.state.global_step + 1, **means, **lag,
                       "failed": sum(not r.ok for r in rollout.last_rows)})
        line.update(values=means)
        return fields

    names = list(reward_weights)
    vllm: dict[str, Any] = {"use_vllm": True, "vllm_mode": "server", "vllm_server_base_url": g.vllm_url} \
        if g.use_vllm else {}
    gpu = torch.cuda.is_available()
    adaptive: dict[str, Any] = {"entropy_target": g.entropy_target} if g.entropy_target is not None else {}
    # a mix's prompts are in the order of its weighted schedule (each step near every env's share): keep it
    order: dict[str, Any] = {"shuffle_dataset": False} if mix is not None else {}
    args = GRPOConfig(output_dir=str(out / "checkpoints" / "grpo"), max_steps=g.steps,
                      per_device_train_batch_size=g.prompts_per_step * g.num_generations,
                      num_generations=g.num_generations, max_completion_length=g.max_completion_length,
                      learning_rate=g.learning_rate, lr_scheduler_type="constant_with_warmup",
                      warmup_steps=g.warmup_steps, beta=g.beta, scale_rewards=g.scale_rewards,
                      entropy_coef=g.entropy_coef, use_adaptive_entropy=g.entropy_target is not None,
                      temperature=g.temperature, top_p=g.top_p, reward_weights=[reward_weights[n] for n in names],
                      logging_steps=1, save_strategy="steps", save_steps=g.save_steps, report_to=[], use_cpu=not gpu,
                      seed=seed, disable_tqdm=not (show_progress and verbose), **cpu_settings(gpu), **vllm, **adaptive,
                      **order)
    dataset = datasets.Dataset.from_dict({"prompt": [json.dumps(dict(p)) for p in prompts]})
    trainer = grpo_trainer_class()(model=model, processing_class=tokenizer, args=args, train_dataset=dataset,
                                   reward_funcs=[_named(field_reward(n), n) for n in names], rollout_func=rollout_func,
                                   allowed_from=rollout, credit=g.credit, turn_reward_weight=g.turn_reward_weight,
                                   callbacks=[log_callback(metrics, "grpo"), _flush_on_save(games.writer),
                                              budget_callback(budget, line)])
    quiet_trainer(trainer, verbose)
    # a checkpoint is complete once its trainer_state.json is written; a kill during a save leaves one without
    checkpoints = sorted((p.parent for p in (out / "checkpoints" / "grpo").glob("checkpoint-*/trainer_state.json")),
                         key=lambda p: int(p.name.split("-")[1]))
    if checkpoints:
        console.print(f"resuming GRPO from {checkpoints[-1]}")
    with shown(line, show_progress):
        trainer.train(resume_from_checkpoint=str(checkpoints[-1]) if checkpoints else None)
    rollout.close()
    final = out / "checkpoints" / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    record = {"steps": trainer.state.global_step, "planned_steps": g.steps, "seconds": round(budget.elapsed, 1),
              "budget_s": g.budget_s, "cut_short": budget.cut_short}
    note = training_note(record)
    console.print(f"GRPO (this session): [yellow]{note}[/]" if budget.cut_short else f"GRPO (this session): {note}")
    return trainer.model, record


def training_note(record: Mapping[str, Any]) -> str:
    """What a GRPO phase did against what was planned (``record``: :func:`train_grpo`'s budget record); a run the
    time budget cut says so and what it cost."""
    steps = record["steps"]
    planned = record.get("planned_steps", steps)
    if record.get("cut_short"):
        return (f"CUT SHORT by grpo.budget_s={record['budget_s']:g}: {steps} of {planned} planned GRPO steps "
                f"({planned - steps} not trained), so the trained figures are not these settings' result; "
                "rerun on a quieter machine or raise grpo.budget_s")
    return f"{steps} of {planned} planned GRPO steps in {record['seconds']:g} s (the time budget did not cut it)"


def _flush_on_save(writer: Any) -> Any:
    """Write buffered rows before the trainer checkpoints, so a resume from it has every earlier episode."""
    from transformers import TrainerCallback

    class _Flush(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if control.should_save:  # set by the default flow callback, which runs first; the save comes after
                writer.flush()

    return _Flush()


def _named(fn: Any, name: str) -> Any:
    fn.__name__ = name  # TRL logs each reward function under its __name__
    return fn
