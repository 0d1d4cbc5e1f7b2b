"""RL alone on any env: GRPO through the Ray rollout pool, no teacher and no SFT.

    python -m openenv_train.recipes.grpo env=catch [--config FILE] [section.key=value ...]
    openenv-train train grpo -s env=tic_tac_toe
    python -m openenv_train.recipes.grpo envs='{catch: 1, tic_tac_toe: 1, blackjack: 1}'   # one policy, a mix

1. Env servers (catalog name, ``module:Class``, or ``env=http://...`` for a running server) and a Ray pool.
2. The tiny offline model (character tokens; or ``model.path=...``).
3. The untrained policy on held-out reset seeds (``eval.seed`` and up; training seeds are below it), sampled at
   ``eval.temperature`` (1.0: the policy GRPO trains) and greedily.
4. GRPO: ``grpo.steps`` steps (150; ``grpo.budget_s`` is only a safety net, and a run it cuts says so in its
   summary), each playing ``grpo.prompts_per_step`` training seeds ``grpo.num_generations`` times; the reward is
   the env's. Replies are restricted to the env's legal actions where it publishes them (``guided_choice``).
5. The trained policy on the same held-out seeds, the same two ways.
6. ``runs/grpo-<env>/``: traces, checkpoints, ``metrics.jsonl``, ``training.png``, ``summary.md``/``.json``
   (per phase the mean reward with its 95% CI under ``phases.<phase>.reward``; the paired difference under
   ``steps["untrained->grpo"]``).

With ``envs`` (a mix, replacing ``env``): one pool over every env (each its own actors and servers), each step's
groups drawn by weight (a group is one task of one env), rewards divided by each env's running scale
(``mix_normalise``), per-env metrics every step, each env evaluated on its held-out split (its Task API's ``test``
split, else seeds from ``eval.seed``), and ``runs/grpo-mix-<envs>/summary.md`` with per env the untrained and
trained means and their paired difference, and the mix's mean (each env counted once).

``eval.beam_width=W`` also plays the held-out seeds by a width-W beam over the legal actions before and after GRPO
(``untrained_beam``, ``grpo_beam``), beside the sampled and greedy figures.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console

from ..pool import PoolConfig
from ._config import config_to_dict
from ._entry import recipe_main
from ._env_agent import HISTORIES, ActionAgent
from ._grpo_phase import GRPOSection, MixTraining, train_grpo, training_note
from ._mix import discover_tasks, held_out_prompts, mix_difference, mix_markdown, mix_name, parse_mix, train_prompts
from ._recipe_run import RecipeRun
from ._report import plot_training, write_summary
from ._rollout_setup import Games, GamesFailed, sandbox_setting
from ._sections import OutputSection, recipe_pool
from ._stats import paired_difference
from ._training import ModelSection, load_model

__all__ = ["EpisodeSection", "EvalSection", "GrpoConfig", "OutputSection", "main", "run"]

console = Console()
LABELS = {"untrained": "untrained", "grpo": "after GRPO", "untrained_greedy": "untrained, greedy",
          "grpo_greedy": "after GRPO, greedy", "untrained_beam": "untrained, beam", "grpo_beam": "after GRPO, beam"}


@dataclass
class EpisodeSection:
    """How episodes are played."""

    sandbox: str = "auto"
    """``on``: env servers in the OS sandbox (fail if it is missing); ``auto``: when available; ``off``."""
    max_turns: int = 30
    """Model turns per episode."""
    constrained: bool = True
    """Restrict every reply to the env's published legal actions (``guided_choice``), in every phase."""
    system_prompt: str | None = None
    """A first system message for every episode (e.g. the rules, for a pretrained ``model.path``)."""
    history: str = "current"
    """What each prompt holds: ``current``, the current observation alone (the catalog's games show the whole state:
    a board, a hand and the bets so far); ``all``, the whole episode so far (envs whose observation is only the
    latest message). With ``current`` GRPO trains each turn as a row of its own under the prompt it was sampled
    from; catch's 10-row board learned only so (docs/results.md)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Reset options of every episode, training and held-out (e.g. ``{rows: 5}`` for catch); the env's own
    defaults where empty."""

    def __post_init__(self) -> None:
        if self.sandbox not in ("on", "auto", "off"):
            raise ValueError(f"episode.sandbox must be on, auto or off, got {self.sandbox!r}")
        if self.history not in HISTORIES:
            raise ValueError(f"episode.history must be one of {', '.join(HISTORIES)}, got {self.history!r}")


@dataclass
class EvalSection:
    """Greedy evaluation on held-out reset seeds, before and after GRPO."""

    episodes: int = 300
    """Held-out episodes per env: reset seeds ``seed`` .. ``seed + episodes - 1`` (or the first of its test split).
    Sampled games vary: at 100 the same untrained policy read 0.27, 0.49 and 0.54 on tic_tac_toe in three runs, a
    spread that hides a gain of +0.2 (docs/results.md); 300 narrows the interval by ~40% for ~10 s more per env and
    evaluation."""
    temperature: float = 1.0
    """Sampling temperature of the compared evaluations: the policy GRPO trains is the one it samples from (an
    untrained model's greedy moves are one arbitrary fixed policy); the greedy ones are reported beside them."""
    greedy: bool = True
    """Also evaluate greedily (``untrained_greedy``, ``grpo_greedy``), with their own paired difference."""
    beam_width: int = 0
    """Also evaluate by beam search of this width (``untrained_beam``, ``grpo_beam``; 0: off; at most 16): each
    reply is the most likely one a beam over the env's legal actions finds (``use_beam_search`` with the
    ``guided_choice`` the agent sends), scored by the model's log-probability of the whole reply, end token
    included. Off by default: on the catalog's games an action id is one token, so a beam ranks the actions greedy
    ranks, weighted by the end token's probability after each, which training under the constraint never moves
    (its masked probability is 1); on catch it matched greedy's reward on every held-out seed (docs/results.md)."""
    seed: int = 1_000_000
    """First held-out reset seed; GRPO trains on seeds below it."""
    bootstrap_resamples: int = 2000
    """Resamples of the bootstrap intervals."""


def _default_grpo() -> GRPOSection:
    # A KL term to the starting policy: without it, catch on a 5x5 board collapsed onto one move sequence before
    # it learned to read the board (every group's rewards equal within ten steps, even at 3e-5). On catch's 10-row
    # board the policy still fell onto one move (a move preferred whatever the board makes every game of a seed end
    # alike: no advantage left to learn from): Adam's first step at 2e-4 took the move entropy from 0.43 to 0.14,
    # so the rate warms up; and an entropy bonus pulls a collapsing policy back (docs/results.md).
    # A run is its steps, not its seconds: catch's 10-row board reads the ball only after ~60-100 steps, which a
    # 420 s budget reached on one machine and not on a slower one. The budget is a safety net (about 3x a quiet
    # 2-core machine's catch run) that says when it cut a run short; 4e-4 learned catch's board in fewer steps
    # than 2e-4 (docs/results.md)
    return GRPOSection(budget_s=3600.0, steps=150, learning_rate=4e-4, warmup_steps=10, beta=0.1, entropy_coef=0.05,
                       max_completion_length=1024, per_turn_tokens=4, save_steps=20)


@dataclass
class GrpoConfig:
    """Every setting of the recipe; ``section.key=value`` overrides any of them."""

    seed: int = 0
    """Seed of the trainer (and of the tiny model's initial weights through ``model.init_seed``)."""
    show_progress: bool = True
    """Live progress lines on the console."""
    verbose: bool = False
    """Also print the trainers' per-step dictionaries (they always go to ``metrics.jsonl``)."""
    env: str = "catch"
    """The env: a catalog name (``openenv-train catalog``), ``package.module:Class``, or a running server's URL."""
    envs: dict[str, Any] | None = None
    """A mix to train one policy on, replacing ``env``: each env (as ``env``, or a folder of Harbor tasks) with a
    weight, or with a mapping of ``weight``, ``options`` (its reset options, over ``episode.options``),
    ``max_turns``, ``max_tokens`` (completion tokens per model call, over ``grpo.per_turn_tokens``), ``request``
    (more request fields, e.g. a ``guided_regex``) and ``reply_field`` (the action field a plain-text reply fills,
    e.g. ``answer`` for reasoning_gym), e.g. ``envs='{catch: 1, tic_tac_toe: {weight: 2, options: {opponent:
    first}}}'``. Each env gets ``pool.num_actors`` actors of its own; the run is named ``grpo-mix-<env>-...``."""
    mix_normalise: str = "env_std"
    """With ``envs``: ``env_std`` divides each env's rewards by its running standard deviation (each group is one
    env's, so only the scale differs between envs; it matters under ``grpo.scale_rewards`` batch or none); ``none``
    leaves them."""
    episode: EpisodeSection = field(default_factory=EpisodeSection)
    model: ModelSection = field(default_factory=lambda: ModelSection(max_context=1024, init_range=0.1))
    """The policy; the tiny model starts from wider weights here than in the Wordle recipe (``init_range`` 0.1):
    at 0.02 its attention is near uniform, so its moves barely depend on where a piece is on a board."""
    pool: PoolConfig = field(default_factory=lambda: recipe_pool(sessions_per_actor=32))
    """The Ray rollout pool: any :class:`~openenv_train.pool.PoolConfig` field; ``max_turns``, ``sandbox``,
    ``show_progress`` and ``run_id`` come from ``episode.max_turns``, ``episode.sandbox``, ``show_progress`` and
    the run name."""
    grpo: GRPOSection = field(default_factory=_default_grpo)
    eval: EvalSection = field(default_factory=EvalSection)
    output: OutputSection = field(default_factory=OutputSection)

    @property
    def run_name(self) -> str:
        """The run folder's name."""
        if self.envs is not None and not self.output.name:
            return mix_name(parse_mix(self.envs))
        return self.output.name or f"grpo-{self.env.rsplit('/', 1)[-1].replace(':', '-')}"

    def train_seeds(self) -> list[int]:
        """One reset seed per GRPO group, all below the held-out ones."""
        return list(range(self.grpo.steps * self.grpo.prompts_per_step))

    def held_out_seeds(self) -> list[int]:
        """The evaluation's reset seeds."""
        return list(range(self.eval.seed, self.eval.seed + self.eval.episodes))

    def __post_init__(self) -> None:
        if self.envs is not None:
            parse_mix(self.envs)  # a bad mix is refused before anything starts
        if self.mix_normalise not in ("env_std", "none"):
            raise ValueError(f"mix_normalise must be env_std or none, got {self.mix_normalise!r}")
        if self.grpo.steps * self.grpo.prompts_per_step > self.eval.seed:
            raise ValueError(f"grpo.steps x grpo.prompts_per_step ({self.grpo.steps * self.grpo.prompts_per_step}) "
                             f"training seeds would reach the held-out ones from eval.seed={self.eval.seed}: raise "
                             "eval.seed")
        if self.eval.episodes < 1:
            raise ValueError(f"eval.episodes must be >= 1, got {self.eval.episodes}")
        if not 0 <= self.eval.beam_width <= 16:
            raise ValueError(f"eval.beam_width must be between 0 (off) and 16 (the endpoint's widest beam), got "
                             f"{self.eval.beam_width}")
        if self.grpo.credit != "episode":
            raise ValueError(f"grpo.credit={self.grpo.credit!r} needs a reward per turn, which this recipe does not "
                             "score (the Wordle recipe does): use grpo.credit=episode")


def _episode_metrics(row: Any) -> dict[str, float]:
    from ..trace import beam_decoded

    reward = float(row.reward or 0.0)
    # a beam-decoded call records a turn per beam returned: count its best one
    calls = [t for t in row.trace.turns if (beam_decoded(t) or {}).get("rank", 0) == 0]
    return {"reward": reward, "win": float(reward > 0), "turns": float(len(calls))}


def _eval_backend(model: Any, tokenizer: Any, cfg: GrpoConfig, phase: str,
                  caller_may_set: tuple[str, ...] = ()) -> Any:
    """The endpoint's backend of an evaluation: sampled at ``eval.temperature``, greedy for a ``*_greedy`` phase,
    a width ``eval.beam_width`` beam for a ``*_beam`` one; ``caller_may_set``: request fields a caller's value keeps."""
    from ..policy import FixedSampling, LocalBackend

    model.eval()
    beam = phase.endswith("_beam")
    decoding: dict[str, Any] = {"use_beam_search": True, "n": cfg.eval.beam_width} if beam else {}
    temperature = 0.0 if beam or phase.endswith("_greedy") else cfg.eval.temperature
    return FixedSampling(LocalBackend(model, tokenizer), temperature=temperature, max_tokens=cfg.grpo.per_turn_tokens,
                         constrained=cfg.episode.constrained, caller_may_set=caller_may_set, **decoding)


def _evaluate(rec: RecipeRun, games: Games, model: Any, tokenizer: Any, cfg: GrpoConfig, phase: str) -> None:
    """The held-out episodes, decoded as the phase's name says (:func:`_eval_backend`)."""
    backend = _eval_backend(model, tokenizer, cfg, phase)

    def report(result: dict[str, Any], n: int) -> str:
        m = result["metrics"]["reward"]
        return (f"[bold]{LABELS[phase]}[/] ({n} held-out episodes): mean reward {m['mean']:.3f} "
                f"[{m['ci_low']:.3f}, {m['ci_high']:.3f}]")

    rec.evaluate(phase, LABELS[phase],
                 lambda: games.play_seeds(backend, cfg.held_out_seeds(), f"eval-{phase}", cfg.episode.options),
                 _episode_metrics, resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed, report=report)


def _agent(cfg: GrpoConfig, reply_field: str = "message") -> ActionAgent:
    """The episode's agent (``reply_field``: the action field a plain-text reply fills)."""
    return ActionAgent(constrained=cfg.episode.constrained, system_prompt=cfg.episode.system_prompt,
                       history=cfg.episode.history, reply_field=reply_field)


def _agent_and_evals(cfg: GrpoConfig) -> tuple[ActionAgent, tuple[str, ...]]:
    """The episode's agent, and the untrained evaluations to run (sampled; greedy and by beam where asked)."""
    return _agent(cfg), ("untrained", *(["untrained_greedy"] if cfg.eval.greedy else []),
                         *(["untrained_beam"] if cfg.eval.beam_width else []))


def run(cfg: GrpoConfig, *, resume: bool = False) -> dict[str, Any]:
    """Run (or resume) the recipe; returns the summary written to ``summary.json``."""
    if cfg.envs is not None:
        return _run_mix(cfg, resume=resume)
    out = Path(cfg.output.dir) / cfg.run_name
    rec = RecipeRun.open(out, config_to_dict(cfg), resume=resume, console=console, phases=5)
    started = time.perf_counter()
    url = cfg.env if "://" in cfg.env else None
    pool = dataclasses.replace(cfg.pool, max_turns=cfg.episode.max_turns, show_progress=cfg.show_progress,
                               run_id=cfg.run_name, sandbox=sandbox_setting(cfg.episode.sandbox, url, "episode.sandbox"))
    agent, evals = _agent_and_evals(cfg)
    games = None
    try:
        with rec.phase("env servers, rollout pool and model", 1):
            games = Games(cfg.env, agent, pool, out)
            model, tokenizer = load_model(cfg.model, out / "checkpoints" / "init")
            console.print(f"{cfg.env}: {sum(p.numel() for p in model.parameters()):,}-parameter policy, "
                          f"{pool.num_actors} actors x {pool.sessions_per_actor} sessions")
        with rec.phase("baseline: the untrained policy on held-out seeds", 2):
            for phase in evals:
                _evaluate(rec, games, model, tokenizer, cfg, phase)
        with rec.phase("GRPO through the rollout pool", 3):
            prompts = [{**cfg.episode.options, "seed": s} for s in cfg.train_seeds()]
            grpo = partial(train_grpo, model, tokenizer, games, prompts, cfg.grpo, out, metrics=rec.metrics,
                           reward_weights={"env": 1.0}, row_metrics=_episode_metrics,
                           turn_rows=cfg.episode.history == "current", seed=cfg.seed,
                           show_progress=cfg.show_progress, verbose=cfg.verbose)
            model = rec.train("grpo", out / "checkpoints" / "final", model, grpo, enabled=True, setting="grpo")
        with rec.phase("the trained policy on the same seeds", 4):
            for phase in evals:
                _evaluate(rec, games, model, tokenizer, cfg, phase.replace("untrained", "grpo"))
    finally:
        if games is not None:
            games.close()
    with rec.phase("summary", 5):
        return _summary(rec, cfg, started)


def _summary(rec: RecipeRun, cfg: GrpoConfig, started: float) -> dict[str, Any]:
    """``summary.json``/``.md`` and ``training.png``: mean reward per phase and the paired differences."""
    out, evals = rec.out, rec.state.data["evals"]
    extra: dict[str, Any] = {"title": f"GRPO on {cfg.env}", "run": str(out), "held_out_episodes": cfg.eval.episodes,
                             "eval_temperature": cfg.eval.temperature, "budgets": rec.state.data.get("budgets", {}),
                             "seconds_this_session": round(time.perf_counter() - started, 1),
                             "training": _training_note(rec.state.data.get("budgets", {})),
                             "config": config_to_dict(cfg)}
    if "untrained_greedy" in evals and "grpo_greedy" in evals:
        extra["greedy_untrained->grpo"] = paired_difference(
            evals["grpo_greedy"]["per_task"]["reward"], evals["untrained_greedy"]["per_task"]["reward"],
            resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed)
    extra.update(_beam_figures(evals, cfg))
    summary = write_summary(out, evals, order=["untrained", "grpo"], metric="reward", labels=LABELS, extra=extra,
                            resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed,
                            also=["untrained_greedy", "grpo_greedy", "untrained_beam", "grpo_beam"])
    plot_training(rec.metrics.read(), out / "training.png", evals=evals, labels=LABELS)
    console.print((out / "summary.md").read_text())
    return summary


def _beam_figures(evals: dict[str, Any], cfg: GrpoConfig) -> dict[str, Any]:
    """With beam phases: GRPO's effect on the beam (``beam_untrained->grpo``) and the beam against greedy on the
    same seeds (``beam_minus_greedy``, per stage), each paired."""
    def paired(after: str, before: str) -> dict[str, float]:
        return paired_difference(evals[after]["per_task"]["reward"], evals[before]["per_task"]["reward"],
                                 resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed)

    figures: dict[str, Any] = {}
    if "untrained_beam" in evals and "grpo_beam" in evals:
        figures["beam_untrained->grpo"] = paired("grpo_beam", "untrained_beam")
    stages = [s for s in ("untrained", "grpo") if f"{s}_beam" in evals and f"{s}_greedy" in evals]
    if stages:
        figures["beam_minus_greedy"] = {s: paired(f"{s}_beam", f"{s}_greedy") for s in stages}
    return figures


def _run_mix(cfg: GrpoConfig, *, resume: bool) -> dict[str, Any]:
    """The recipe over ``cfg.envs``: one MixedPool, per-env held-out evaluations, a per-env summary."""
    from ..pool import MixEnvFailed

    out = Path(cfg.output.dir) / cfg.run_name
    rec = RecipeRun.open(out, config_to_dict(cfg), resume=resume, console=console, phases=5)
    started = time.perf_counter()
    mix = [dataclasses.replace(e, options={**cfg.episode.options, **e.options})
           for e in parse_mix(cfg.envs or {}, make_agent=partial(_agent, cfg))]
    # the sandbox setting matters only where the recipe starts servers whose env does not choose for itself
    local = any(isinstance(e.env, str) and "://" not in e.env and e.sandbox is None for e in mix)
    pool = dataclasses.replace(cfg.pool, max_turns=cfg.episode.max_turns, show_progress=cfg.show_progress,
                               run_id=cfg.run_name, sandbox=local and sandbox_setting(cfg.episode.sandbox, None,
                                                                                      "episode.sandbox"))
    agent, evals = _agent_and_evals(cfg)
    games = None
    try:
        with rec.phase("env servers (one pool over the mix) and model", 1):
            tasks = {}
            for e in mix:
                try:
                    tasks[e.name] = discover_tasks(e.env)
                except Exception as exc:  # an env that cannot even answer names itself; nothing was started
                    raise MixEnvFailed(e.name, exc) from exc
            games = Games(mix, agent, pool, out)
            model, tokenizer = load_model(cfg.model, out / "checkpoints" / "init")
            for e in mix:
                t = tasks[e.name]
                where = (f"splits {t.train_split!r} ({t.train_size}) / {t.test_split!r} ({t.test_size})"
                         if t.from_task_api else f"seeds (held out from {cfg.eval.seed})")
                console.print(f"  {e.name}: weight {e.weight:g}, tasks from {where}")
        with rec.phase("baseline: the untrained policy on each env's held-out tasks", 2):
            for phase in evals:
                _evaluate_mix(rec, games, model, tokenizer, cfg, phase, mix, tasks)
        with rec.phase("GRPO over the mix", 3):
            prompts = train_prompts(mix, tasks, cfg.grpo.steps * cfg.grpo.prompts_per_step, seed=cfg.seed,
                                    seed_limit=cfg.eval.seed)
            mixed = games.pool
            training = MixTraining([e.name for e in mix], mixed.env_of, normalise=cfg.mix_normalise == "env_std",
                                   retries=lambda: {name: m.retries for name, m in mixed.metrics.items()})
            grpo = partial(train_grpo, model, tokenizer, games, prompts, cfg.grpo, out, metrics=rec.metrics,
                           reward_weights={"env": 1.0}, row_metrics=_episode_metrics,
                           turn_rows=cfg.episode.history == "current", seed=cfg.seed,
                           show_progress=cfg.show_progress, verbose=cfg.verbose, mix=training)
            model = rec.train("grpo", out / "checkpoints" / "final", model, grpo, enabled=True, setting="grpo")
        with rec.phase("the trained policy on the same tasks", 4):
            for phase in evals:
                _evaluate_mix(rec, games, model, tokenizer, cfg, phase.replace("untrained", "grpo"), mix, tasks)
    finally:
        if games is not None:
            games.close()
    with rec.phase("summary", 5):
        return _mix_summary(rec, cfg, [e.name for e in mix], started)


def _evaluate_mix(rec: RecipeRun, games: Games, model: Any, tokenizer: Any, cfg: GrpoConfig, phase: str,
                  mix: list[Any], tasks: dict[str, Any]) -> None:
    """Every env's held-out tasks in one batch (the envs play side by side); recorded per env as ``phase/env``."""
    from ..pool import EpisodeSpec

    todo = [e for e in mix if f"{phase}/{e.name}" not in rec.state.data["evals"]]
    rows: dict[str, list[Any]] = {e.name: [] for e in mix}
    if todo:
        # an env's own per-call token limit (its requests' max_tokens) stands; grpo.per_turn_tokens is the default
        backend = _eval_backend(model, tokenizer, cfg, phase, caller_may_set=("max_tokens",))
        specs = []
        for e in todo:
            for i, prompt in enumerate(held_out_prompts(e, tasks[e.name], cfg.eval.episodes, cfg.eval.seed)):
                task = dict(prompt)
                episode = f"eval-{phase}-{e.name}-{i:04d}"
                specs.append(EpisodeSpec(episode, task, task.pop("seed", None), episode))
        for row in games.play_specs(backend, specs):
            rows[games.pool.env_of(row)].append(row)

    for e in mix:
        def report(result: dict[str, Any], n: int, name: str = e.name) -> str:
            m = result["metrics"]["reward"]
            return (f"[bold]{LABELS[phase]}[/] on {name} ({n} held-out episodes): mean reward {m['mean']:.3f} "
                    f"[{m['ci_low']:.3f}, {m['ci_high']:.3f}]")

        rec.evaluate(f"{phase}/{e.name}", f"{LABELS[phase]} on {e.name}", partial(rows.__getitem__, e.name),
                     _episode_metrics, resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed, report=report)


def _training_note(budgets: dict[str, Any]) -> str:
    """The summary's ``training`` line: the GRPO phase's :func:`training_note`, or that it did not run."""
    return training_note(budgets["grpo"]) if budgets.get("grpo") else "GRPO did not run"


def _mix_summary(rec: RecipeRun, cfg: GrpoConfig, envs: list[str], started: float) -> dict[str, Any]:
    """``summary.json``/``.md``: per env untrained, trained and their paired difference; the mix's mean."""
    out, evals = rec.out, rec.state.data["evals"]
    summary: dict[str, Any] = {"title": f"GRPO on a mix of {', '.join(envs)}", "run": str(out), "metric": "reward",
                               "held_out_episodes_per_env": {e: evals[f"untrained/{e}"]["metrics"]["reward"]["n"]
                                                             for e in envs if f"untrained/{e}" in evals}}
    for before, after in (("untrained", "grpo"), ("untrained_greedy", "grpo_greedy"), ("untrained_beam", "grpo_beam")):
        if not all(f"{p}/{e}" in evals for p in (before, after) for e in envs):
            continue
        reward = {p: {e: evals[f"{p}/{e}"]["per_task"]["reward"] for e in envs} for p in (before, after)}
        diff = mix_difference(reward[after], reward[before], resamples=cfg.eval.bootstrap_resamples, seed=cfg.seed)
        summary[after] = {
            "envs": {e: {"untrained": evals[f"{before}/{e}"]["metrics"]["reward"],
                         "trained": evals[f"{after}/{e}"]["metrics"]["reward"], "paired": diff["envs"][e]}
                     for e in envs},
            "mix": {"untrained": sum(sum(v) / len(v) for v in reward[before].values()) / len(envs),
                    "trained": sum(sum(v) / len(v) for v in reward[after].values()) / len(envs),
                    "paired": diff["mix"]}}
    summary.update({"budgets": rec.state.data.get("budgets", {}),
                    "training": _training_note(rec.state.data.get("budgets", {})),
                    "seconds_this_session": round(time.perf_counter() - started, 1), "config": config_to_dict(cfg)})
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    (out / "summary.md").write_text(mix_markdown(summary, LABELS))
    plot_training(rec.metrics.read(), out / "training.png", evals={}, labels=LABELS)
    console.print((out / "summary.md").read_text())
    return summary


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    from ..pool import MixEnvFailed

    return recipe_main(GrpoConfig, run, argv, module="openenv_train.recipes.grpo",
                       doc=__doc__, example="env=tic_tac_toe", errors=(GamesFailed, MixEnvFailed))


if __name__ == "__main__":
    raise SystemExit(main())
