"""The GRPO Wordle recipe's settings: one typed dataclass per section of ``configs/grpo_wordle.yaml``."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ._training import ModelSection, SFTSection

__all__ = ["EnvSection", "EvalSection", "GRPOSection", "GrpoWordleConfig", "OutputSection", "PoolSection"]


@dataclass
class EnvSection:
    """Where the Wordle games run."""

    url: str | None = None
    """A running OpenEnv-compatible Wordle server (ours, or OpenEnv's TextArena one); null starts ours."""
    sandbox: str = "auto"
    """``on``: env servers in the OS sandbox (fail if it is missing); ``auto``: when available; ``off``."""
    max_turns: int = 10
    """Model turns per game (six guesses plus room for refused ones)."""


@dataclass
class PoolSection:
    """The Ray rollout pool."""

    num_actors: int = 2
    sessions_per_actor: int = 16
    ray_address: str | None = None
    """An existing Ray cluster (``auto``, ``ray://host:10001``); null starts a local one."""
    ray_num_cpus: int | None = None
    episode_timeout_s: float = 120.0


@dataclass
class GRPOSection:
    """GRPO with TRL through the pool."""

    enabled: bool = True
    steps: int = 30
    prompts_per_step: int = 4
    """Secrets per step; each is played ``num_generations`` times (one group)."""
    num_generations: int = 8
    learning_rate: float = 2e-4
    beta: float = 0.0
    """KL weight to the reference (SFT) model; 0 skips the reference model."""
    temperature: float = 1.0
    top_p: float = 1.0
    max_completion_length: int = 160
    """Tokens of one game's joined completion (model and env tokens) that are trained on."""
    per_turn_tokens: int = 12
    """Tokens the model may write per guess."""
    reward_weights: dict[str, float] = field(default_factory=lambda: {"env": 1.0, "greens": 0.5, "yellows": 0.2,
                                                                       "invalid_guesses": -0.5})
    """Reward components (``env`` = the game's reward; the ``wordle`` rubric's names) and their weights."""
    save_steps: int = 10
    use_vllm: bool = False
    """Generate with a ``trl vllm-serve`` server (GPU) that the trainer keeps in sync; see ``vllm_url``."""
    vllm_url: str = "http://127.0.0.1:8000"

    def __post_init__(self) -> None:
        if self.steps < 1 or self.prompts_per_step < 1:
            raise ValueError("grpo.steps and grpo.prompts_per_step must be >= 1")
        if self.num_generations < 2:
            raise ValueError(f"grpo.num_generations must be >= 2 (GRPO compares the games of a group), "
                             f"got {self.num_generations}")
        names = {"env", "correct", "greens", "yellows", "format", "repetition", "invalid_guesses"}
        unknown = sorted(set(self.reward_weights) - names)
        if unknown or not self.reward_weights:
            raise ValueError(f"grpo.reward_weights: unknown component(s) {unknown}; components: {sorted(names)}")


@dataclass
class EvalSection:
    """Greedy evaluation on held-out secrets, with bootstrap intervals."""

    words: int = 100
    """Held-out secrets (never used for SFT or GRPO)."""
    bootstrap_resamples: int = 2000


@dataclass
class OutputSection:
    """Where the run is written."""

    dir: str = "runs"
    name: str = "grpo-wordle"


@dataclass
class GrpoWordleConfig:
    """Every setting of the recipe (``configs/grpo_wordle.yaml``)."""

    seed: int = 0
    show_progress: bool = True
    model: ModelSection = field(default_factory=ModelSection)
    env: EnvSection = field(default_factory=EnvSection)
    pool: PoolSection = field(default_factory=PoolSection)
    sft: SFTSection = field(default_factory=SFTSection)
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

    def __post_init__(self) -> None:
        if self.env.sandbox not in ("on", "auto", "off"):
            raise ValueError(f"env.sandbox must be on, auto or off, got {self.env.sandbox!r}")
