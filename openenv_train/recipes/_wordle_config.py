"""The GRPO Wordle recipe's settings: one typed dataclass per section of ``configs/grpo_wordle.yaml``."""

from __future__ import annotations

import dataclasses
import random
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..pool import PoolConfig
from ._config import config_to_dict
from ._training import ModelSection, SFTSection

__all__ = ["REWARD_RUBRIC", "SET_ELSEWHERE", "EnvSection", "EvalSection", "GRPOSection", "GrpoWordleConfig",
           "OutputSection", "PoolSection", "TeacherSection", "recipe_pool"]


@dataclass
class EnvSection:
    """Where the Wordle games run."""

    url: str | None = None
    """A running OpenEnv-compatible Wordle server (ours, or OpenEnv's TextArena one); null starts ours."""
    sandbox: str = "auto"
    """``on``: env servers in the OS sandbox (fail if it is missing); ``auto``: when available; ``off``."""
    max_turns: int = 10
    """Model turns per game (six guesses plus room for refused ones)."""
    system_prompt: str | None = None
    """A first system message for every game (e.g. the rules, for a pretrained ``--model``); none by default."""


def recipe_pool(**fields: Any) -> PoolConfig:
    """The ``pool`` section's defaults: a :class:`~openenv_train.pool.PoolConfig` with the recipe's own values.

    2 actors x 50 sessions play a whole 100-secret evaluation in one wave; a game gets 120 s. Every other field
    keeps PoolConfig's default; ``fields`` replace any of them.
    """
    return PoolConfig(**{"num_actors": 2, "sessions_per_actor": 50, "episode_timeout_s": 120.0, **fields})


def PoolSection(**fields: Any) -> PoolConfig:  # noqa: N802 (the section's former class name)
    """Deprecated: the ``pool`` section is a :class:`~openenv_train.pool.PoolConfig`; use :func:`recipe_pool`."""
    warnings.warn("PoolSection is deprecated and will be removed in the next release: the pool section is a "
                  "PoolConfig; use recipe_pool(**fields) for one with the recipe's defaults", DeprecationWarning,
                  stacklevel=2)
    return recipe_pool(**fields)


#: The rubric that scores the GRPO games: ``grpo.reward_weights`` names its components.
REWARD_RUBRIC = "wordle"

#: PoolConfig fields the recipe sets from its other options: ``pool.<field>`` must keep PoolConfig's default.
SET_ELSEWHERE = {"max_turns": "env.max_turns", "sandbox": "env.sandbox", "show_progress": "show_progress",
                 "run_id": "output.name"}


@dataclass
class TeacherSection:
    """The teacher whose games the SFT phase imitates: a fixed opening, then each guess a random answer word
    consistent with every mark so far."""

    opening: list[str] = field(default_factory=lambda: ["stale", "prion", "duchy"])
    """Fixed first guesses of every teacher game (valid guesses); ``[]``: every guess a random consistent word. A
    greedy model plays one opening anyway; a fixed one leaves it far fewer situations to learn (these three test
    15 letters and leave 1.6 candidate answers on average; the teacher still wins 99.5%)."""

    def __post_init__(self) -> None:
        from ..envs.wordle import valid_guesses

        bad = [w for w in self.opening if str(w).lower() not in valid_guesses()]
        if bad or len(set(self.opening)) != len(self.opening):
            raise ValueError(f"teacher.opening: {bad or 'a repeated word'} — give distinct words of the Wordle "
                             f"valid-guess list, e.g. [stale, prion], or [] for none")


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
    """Secrets per step; each is played ``num_generations`` times (one group)."""
    num_generations: int = 8
    """Games per secret; GRPO compares the games of a group."""
    learning_rate: float = 5e-5
    """Constant AdamW learning rate."""
    beta: float = 0.0
    """KL weight to the reference (SFT) model; 0 skips the reference model."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts."""
    top_p: float = 1.0
    """Nucleus sampling of the rollouts."""
    max_completion_length: int = 160
    """Tokens of one game's joined completion (model and env tokens) that are trained on."""
    per_turn_tokens: int = 8
    """Tokens the model may write per guess."""
    reward_weights: dict[str, float] = field(default_factory=lambda: {"env": 1.0, "speed": 0.5, "consistent": 0.5,
                                                                       "invalid_guesses": -0.5})
    """Reward components and weights: ``env`` (the game's reward) or any score of the ``wordle`` rubric
    (:data:`REWARD_RUBRIC`; its ``component_names``, the total ``wordle`` included)."""
    save_steps: int = 10
    """Checkpoint every this many steps (and at the end)."""
    use_vllm: bool = False
    """Generate with a ``trl vllm-serve`` server (GPU) that the trainer keeps in sync; see ``vllm_url``."""
    vllm_url: str = "http://127.0.0.1:8000"
    """The ``trl vllm-serve`` server of ``use_vllm``."""

    def __post_init__(self) -> None:
        from ..rubrics import get_rubric

        if self.steps < 1 or self.prompts_per_step < 1:
            raise ValueError("grpo.steps and grpo.prompts_per_step must be >= 1")
        if self.num_generations < 2:
            raise ValueError(f"grpo.num_generations must be >= 2 (GRPO compares the games of a group), "
                             f"got {self.num_generations}")
        if self.budget_s is not None and self.budget_s <= 0:
            raise ValueError(f"grpo.budget_s must be > 0 seconds or null, got {self.budget_s}")
        # the rollout returns the env's reward and every score the rubric reports (make_rollout_func's reward_<name>)
        names = {"env", *get_rubric(REWARD_RUBRIC).component_names}
        unknown = sorted(set(self.reward_weights) - names)
        if unknown or not self.reward_weights:
            raise ValueError(f"grpo.reward_weights: {f'unknown component(s) {unknown}' if unknown else 'none given'}; "
                             f"components: {sorted(names)}")


@dataclass
class EvalSection:
    """Greedy evaluation on held-out secrets, with bootstrap intervals."""

    words: int = 100
    """Held-out secrets: never a secret in SFT or GRPO (they may be guessed there)."""
    bootstrap_resamples: int = 2000
    """Resamples of the bootstrap intervals."""
    unconstrained: bool = True
    """Also evaluate the final model without the decoding constraint (reported beside the constrained figures)."""


@dataclass
class OutputSection:
    """Where the run is written."""

    dir: str = "runs"
    name: str = "grpo-wordle"


@dataclass
class GrpoWordleConfig:
    """Every setting of the recipe (``configs/grpo_wordle.yaml``)."""

    seed: int = 0
    """Seed of the secret splits, the teacher games and the trainers."""
    show_progress: bool = True
    """Live progress lines on the console."""
    verbose: bool = False
    """Also print the trainers' per-step dictionaries (they always go to ``metrics.jsonl``)."""
    constrained: bool = True
    """Restrict every reply, in every phase, to a valid guess not made before (``guided_choice`` at the policy
    endpoint); it removes illegal words only, never ones that contradict the feedback."""
    model: ModelSection = field(default_factory=ModelSection)
    env: EnvSection = field(default_factory=EnvSection)
    pool: PoolConfig = field(default_factory=recipe_pool)
    """The Ray rollout pool: any :class:`~openenv_train.pool.PoolConfig` field (``pool.max_retries=0``), defaults
    from :func:`recipe_pool`, except those of :data:`SET_ELSEWHERE` (``env.max_turns``, ...)."""
    teacher: TeacherSection = field(default_factory=TeacherSection)
    sft: SFTSection = field(default_factory=lambda: SFTSection(budget_s=600.0))
    grpo: GRPOSection = field(default_factory=GRPOSection)
    eval: EvalSection = field(default_factory=EvalSection)
    output: OutputSection = field(default_factory=OutputSection)

    def secret_splits(self) -> tuple[list[str], list[str], list[str]]:
        """Held-out, SFT and GRPO secrets: the first two disjoint from each other and the third from the first,
        fixed by ``seed``."""
        from ..envs.wordle import answers

        words = sorted(answers())
        random.Random(self.seed).shuffle(words)
        held, rest = words[:self.eval.words], words[self.eval.words:]
        sft = [rest[i % len(rest)] for i in range(self.sft.episodes)]
        rng = random.Random(self.seed + 1)
        return held, sft, [rng.choice(rest) for _ in range(self.grpo.steps * self.grpo.prompts_per_step)]

    def pool_config(self, *, sandbox: bool) -> PoolConfig:
        """The pool's config: the ``pool`` section plus the fields the other sections set (:data:`SET_ELSEWHERE`).

        Args:
            sandbox: run the env servers in the OS sandbox (``env.sandbox`` resolved against the machine).
        """
        return dataclasses.replace(self.pool, max_turns=self.env.max_turns, sandbox=sandbox,
                                   show_progress=self.show_progress, run_id=self.output.name)

    def as_dict(self) -> dict[str, Any]:
        """The config as plain data (``config.yaml``, ``summary.json``), without the ``pool`` fields of
        :data:`SET_ELSEWHERE`: their values there would be PoolConfig's defaults, not the ones the run used."""
        data = config_to_dict(self)
        for name in SET_ELSEWHERE:
            del data["pool"][name]
        return data

    def __post_init__(self) -> None:
        if self.env.sandbox not in ("on", "auto", "off"):
            raise ValueError(f"env.sandbox must be on, auto or off, got {self.env.sandbox!r}")
        defaults = {f.name: f.default for f in dataclasses.fields(PoolConfig)}
        for name, owner in SET_ELSEWHERE.items():
            if getattr(self.pool, name) != defaults[name]:
                raise ValueError(f"pool.{name} is set by {owner} in this recipe: set {owner} instead "
                                 f"(got pool.{name}={getattr(self.pool, name)!r})")
