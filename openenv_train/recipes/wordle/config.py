"""The GRPO Wordle recipe's settings: one typed dataclass per section of ``configs/grpo_wordle.yaml``."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any

from ...pool import PoolConfig
from .._config import config_to_dict
from .._grpo_phase import GRPOSection
from .._sections import OutputSection, recipe_pool
from .._training import ModelSection, SFTSection
from .chat import ANY_ORDER_TOKENS, ORDERS, BranchPlan

__all__ = ["REWARD_RUBRIC", "RUN_NAME", "SET_ELSEWHERE", "EnvSection", "GrpoWordleConfig", "TeacherSection",
           "WordleEvalSection", "WordleGRPOSection"]


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


#: The run folder's name when ``output.name`` is null.
RUN_NAME = "grpo-wordle"

#: The rubric that scores the GRPO games: ``grpo.reward_weights`` names its components.
REWARD_RUBRIC = "wordle"

#: PoolConfig fields the recipe sets from its other options: ``pool.<field>`` must keep PoolConfig's default.
SET_ELSEWHERE = {"max_turns": "env.max_turns", "sandbox": "env.sandbox", "show_progress": "show_progress",
                 "run_id": "output.name"}


@dataclass
class TeacherSection:
    """The teacher whose games the SFT phase imitates: a fixed opening, then each guess a random answer word
    consistent with every mark so far (a valid word that is, once no answer fits)."""

    opening: list[str] = field(default_factory=lambda: ["stale", "prion", "duchy"])
    """Fixed first guesses of every teacher game (valid guesses); ``[]``: every guess a random consistent word. A
    greedy model plays one opening anyway; a fixed one leaves it far fewer situations to learn (these three test
    15 letters and leave 1.6 candidate answers on average; the teacher still wins 99.5%)."""
    valid_share: float = 0.5
    """Share of SFT's secrets drawn from the valid guesses that are not answers (never held out: held-out words are
    answers). With answers alone most answers are the only one with their opening marks, so no game makes them a
    target; a non-answer secret with the same marks does (the teacher guesses the answers that fit first)."""

    def __post_init__(self) -> None:
        from ...envs.wordle import valid_guesses

        if not 0.0 <= self.valid_share <= 1.0:
            raise ValueError(f"teacher.valid_share must be in [0, 1], got {self.valid_share}")
        bad = [w for w in self.opening if str(w).lower() not in valid_guesses()]
        if bad or len(set(self.opening)) != len(self.opening):
            raise ValueError(f"teacher.opening: {bad or 'a repeated word'} — give distinct words of the Wordle "
                             f"valid-guess list, e.g. [stale, prion], or [] for none")


@dataclass
class WordleGRPOSection(GRPOSection):
    """GRPO with TRL through the pool, on secrets the warm start did not train on."""

    secrets: int = 300
    """Answer words kept for GRPO's secrets: never a secret in SFT (they may be guessed there, as held-out words
    may), so GRPO plays words the warm start did not memorise; 0: GRPO's secrets are drawn from SFT's."""
    valid_share: float = 0.0
    """Share of GRPO's secrets drawn from the valid guesses that are not answers (the rest from ``secrets``); they
    may have been SFT secrets too when ``teacher.valid_share`` > 0."""
    reward_weights: dict[str, float] = field(default_factory=lambda: {"env": 1.0, "speed": 0.5, "consistent": 0.5,
                                                                       "invalid_guesses": -0.5})
    """Reward components and weights: ``env`` (the game's reward) or any score of the ``wordle`` rubric
    (:data:`REWARD_RUBRIC`; its ``component_names``, the total ``wordle`` included)."""

    def __post_init__(self) -> None:
        from ...rubrics import get_rubric

        super().__post_init__()
        if self.secrets < 0 or not 0.0 <= self.valid_share <= 1.0:
            raise ValueError(f"grpo.secrets must be >= 0 and grpo.valid_share in [0, 1], got {self.secrets} and "
                             f"{self.valid_share}")
        # the rollout returns the env's reward and every score the rubric reports (make_rollout_func's reward_<name>)
        names = {"env", *get_rubric(REWARD_RUBRIC).component_names}
        unknown = sorted(set(self.reward_weights) - names)
        if unknown or not self.reward_weights:
            raise ValueError(f"grpo.reward_weights: {f'unknown component(s) {unknown}' if unknown else 'none given'}; "
                             f"components: {sorted(names)}")


@dataclass
class WordleEvalSection:
    """Evaluation on held-out secrets, letter-greedy and by beam search, with bootstrap intervals."""

    words: int = 100
    """Held-out secrets: never a secret in SFT or GRPO (they may be guessed there)."""
    bootstrap_resamples: int = 2000
    """Resamples of the bootstrap intervals."""
    unconstrained: bool = True
    """Also evaluate the final model without the decoding constraint (reported beside the constrained figures)."""
    beam_width: int = 16
    """After SFT and after GRPO, also play the held-out games with each guess the best of a beam search of this
    width (``use_beam_search``: whole words by the model's own log-probability, among the valid words not guessed),
    beside the letter-greedy games; GRPO's rollouts keep sampling. 0: letter-greedy only. Measured on one SFT
    checkpoint (``experiments/wordle/wordle_decoding.py``): 76 of 100 held-out games letter-greedy, 91 at width 4,
    95 at width 16 (at most 16: the endpoint's ``n``)."""

    def __post_init__(self) -> None:
        if not 0 <= self.beam_width <= 16:
            raise ValueError(f"eval.beam_width must be between 0 (off) and 16, got {self.beam_width}")


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
    order: str = "given"
    """How the model writes a guess: ``given`` (the word, left to right) or ``any`` (each letter followed by its position,
    in an order the model picks: ``r2e3s4h5f1``; SFT teaches the letters in random orders, so the order is left to
    GRPO; needs ``grpo.per_turn_tokens`` >= 11, and a game is about twice the tokens: ``grpo.max_completion_length``
    256)."""
    model: ModelSection = field(default_factory=ModelSection)
    env: EnvSection = field(default_factory=EnvSection)
    pool: PoolConfig = field(default_factory=recipe_pool)
    """The Ray rollout pool: any :class:`~openenv_train.pool.PoolConfig` field (``pool.max_retries=0``), defaults
    from :func:`recipe_pool`, except those of :data:`SET_ELSEWHERE` (``env.max_turns``, ...)."""
    teacher: TeacherSection = field(default_factory=TeacherSection)
    sft: SFTSection = field(default_factory=lambda: SFTSection(episodes=140000, budget_s=600.0))
    grpo: WordleGRPOSection = field(default_factory=WordleGRPOSection)
    eval: WordleEvalSection = field(default_factory=WordleEvalSection)
    output: OutputSection = field(default_factory=lambda: OutputSection(name=RUN_NAME))

    @property
    def run_name(self) -> str:
        """The run folder's name."""
        return self.output.name or RUN_NAME

    def secret_splits(self) -> tuple[list[str], list[str], list[str]]:
        """Held-out, SFT and GRPO secrets, fixed by ``seed``: held-out words (answers) are never secrets of either
        training phase; GRPO's answers come from ``grpo.secrets`` answers that are not SFT's; a ``teacher.valid_share``
        of SFT's and a ``grpo.valid_share`` of GRPO's are valid guesses that are not answers."""
        from ...envs.wordle import answer_splits, answers, valid_guesses

        # the Wordle server's Task API serves the same splits for the same seed (held_out, grpo, sft)
        splits = answer_splits(self.seed, self.eval.words, self.grpo.secrets)
        words = sorted(answers())
        held, rest = splits["held_out"], splits["sft"]
        reserved = splits["grpo"] if self.grpo.secrets else rest
        others = sorted(set(valid_guesses()) - set(words)) if self.grpo.valid_share or self.teacher.valid_share else []
        pick = random.Random(self.seed + 2)
        sft = [pick.choice(others) if pick.random() < self.teacher.valid_share else rest[i % len(rest)]
               for i in range(self.sft.episodes)]
        rng = random.Random(self.seed + 1)
        grpo = [rng.choice(others if rng.random() < self.grpo.valid_share else reserved)
                for _ in range(self.grpo.steps * self.grpo.prompts_per_step)]
        return held, sft, grpo

    def branch_plan(self) -> BranchPlan | None:
        """The moves GRPO's games explore under ``grpo.credit: branch`` (those after the teacher's opening)."""
        return BranchPlan(first=len(self.teacher.opening)) if self.grpo.credit == "branch" else None

    def pool_config(self, *, sandbox: bool) -> PoolConfig:
        """The pool's config: the ``pool`` section plus the fields the other sections set (:data:`SET_ELSEWHERE`).

        Args:
            sandbox: run the env servers in the OS sandbox (``env.sandbox`` resolved against the machine).
        """
        return dataclasses.replace(self.pool, max_turns=self.env.max_turns, sandbox=sandbox,
                                   show_progress=self.show_progress, run_id=self.run_name)

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
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {self.order!r}")
        if self.order == "any" and self.grpo.use_vllm:
            raise ValueError("order=any needs the local policy backend (guided_choice_order); vLLM does not enforce it: "
                             "set grpo.use_vllm=false or order=given")
        if self.order == "any" and self.grpo.per_turn_tokens < ANY_ORDER_TOKENS:
            raise ValueError(f"order=any writes a guess in {ANY_ORDER_TOKENS} tokens (5 positions, 5 letters, the end): "
                             f"set grpo.per_turn_tokens={ANY_ORDER_TOKENS} or more (got {self.grpo.per_turn_tokens})")
        defaults = {f.name: f.default for f in dataclasses.fields(PoolConfig)}
        for name, owner in SET_ELSEWHERE.items():
            if getattr(self.pool, name) != defaults[name]:
                raise ValueError(f"pool.{name} is set by {owner} in this recipe: set {owner} instead "
                                 f"(got pool.{name}={getattr(self.pool, name)!r})")
