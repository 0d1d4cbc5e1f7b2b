"""Evaluate any checkpoint (or OpenAI-compatible endpoint) on any catalog env; write traces and a summary.

    python -m openenv_train.recipes.eval model=runs/grpo-wordle/checkpoints/final env=wordle episodes=100
    python -m openenv_train.recipes.eval model=http://127.0.0.1:8001/v1 env=echo agent=tool
    python -m openenv_train.recipes.eval model=runs/grpo-catch/checkpoints/final env=catch agent=action \
        seed=1000000 episodes=100 max_turns=30 per_turn_tokens=4

Episode i resets with seed ``seed + i`` (Wordle: the i-th held-out secret of the GRPO recipe's split, so numbers
compare with its summary). Output: ``<output_dir>/<name>/traces/``, ``summary.json``, ``summary.md``.

``samples=N`` (with ``temperature`` > 0) plays every task N times (episodes ``eval-0003-0`` .. ``eval-0003-<N-1>``,
one group per task) and adds pass@k and mean@N over the tasks, with a success defined by ``success_threshold``:

    python -m openenv_train.recipes.eval model=CHECKPOINT env=catch agent=action samples=8 temperature=1.0

``beam_width=W`` decodes each reply by beam search instead (the Wordle recipe's beam evaluation):

    python -m openenv_train.recipes.eval model=runs/grpo-wordle/checkpoints/final env=wordle episodes=100 beam_width=16
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._config import config_from_argv, config_to_dict
from ._env_agent import HISTORIES, ActionAgent, json_action
from ._passk import task_pass_at_k
from ._report import phase_summary, write_summary

__all__ = ["AGENTS", "EvalConfig", "json_action", "main", "run"]

#: The agents an evaluation can play with (:attr:`EvalConfig.agent`).
AGENTS = ("auto", "wordle", "action", "text", "tool")


@dataclass
class EvalConfig:
    """Options of an evaluation."""

    model: str = ""
    """A checkpoint folder, or an OpenAI-compatible base URL (``http://host:port/v1``)."""
    env: str = "wordle"
    """Catalog name, ``module:Class`` or a server URL."""
    episodes: int = 50
    """Tasks: reset seeds ``seed``.. (Wordle: held-out secrets), each played ``samples`` times."""
    seed: int = 0
    samples: int = 1
    """Episodes per task, n of pass@k: above 1 the summary adds pass@1, pass@2, pass@4, .., pass@n and mean@n (the
    mean reward of a task's samples), overall and per task; needs ``temperature`` > 0."""
    success_threshold: float | None = None
    """The reward at or above which an episode is a success (pass@k's definition); null: the catalog env's own
    (``EnvSpec.success_threshold``, 1.0 = a win or a solved task), 1.0 for an env outside the catalog."""
    options: dict[str, Any] = field(default_factory=dict)
    """Reset options of every episode (e.g. ``{rows: 5}`` for catch; the general GRPO recipe's
    ``episode.options``); not for Wordle, whose episodes are the held-out secrets."""
    agent: str = "auto"
    """``wordle`` (the Wordle recipe's chat), ``action`` (the general GRPO recipe's: the env's text in, a legal action
    id or the action out), ``text`` (reply = JSON action), ``tool`` (MCP tools); ``auto`` picks ``wordle``, ``tool``
    or ``text``."""
    history: str = "current"
    """``action`` agent: each prompt holds the ``current`` observation alone or ``all`` of the episode so far (the
    general GRPO recipe's ``episode.history``)."""
    max_turns: int = 10
    per_turn_tokens: int | None = None
    """Tokens per model turn; null: the GRPO recipe's 8 for the wordle agent, else 64."""
    temperature: float = 0.0
    beam_width: int = 0
    """Decode each reply by beam search of this width instead (``use_beam_search``, at most 16; 0: sample at
    ``temperature``): the reply is the most likely sequence the beams find, by the model's own log-probability. With
    a decoding constraint (the Wordle agent's valid guesses, the action agent's legal actions) the beams extend only
    along it: a width at least the choices ranks every one."""
    order: str = "given"
    """``wordle`` agent: how the model writes a guess, as the Wordle recipe's ``order`` (``given`` or ``any``)."""
    constrained: bool = True
    """Restrict each reply (``guided_choice``), as the recipes do: the Wordle agent's to a valid guess not made before,
    the action agent's to the env's legal actions; false evaluates the model's own replies."""
    num_actors: int = 1
    sessions_per_actor: int = 8
    bootstrap_resamples: int = 2000
    output_dir: str = "runs"
    name: str = "eval"
    show_progress: bool = True

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model is required: a checkpoint folder or an OpenAI-compatible URL (model=PATH)")
        if self.agent not in AGENTS:
            raise ValueError(f"agent must be one of {', '.join(AGENTS)}, got {self.agent!r}")
        if self.history not in HISTORIES:
            raise ValueError(f"history must be one of {', '.join(HISTORIES)}, got {self.history!r}")
        if self.options and "wordle" in (self.agent, self.env):
            raise ValueError("options are not for Wordle: its episodes are the recipe's held-out secrets")
        if self.episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {self.episodes}")
        if self.samples < 1:
            raise ValueError(f"samples must be >= 1, got {self.samples}")
        if not 0 <= self.beam_width <= 16 or (self.beam_width and self.samples > 1):
            raise ValueError(f"beam_width must be between 0 (off) and 16, and needs samples=1 (beams are "
                             f"deterministic); got beam_width={self.beam_width}, samples={self.samples}")
        if self.samples > 1 and self.temperature <= 0:
            raise ValueError(f"samples={self.samples} needs temperature > 0 (e.g. temperature=1.0): greedy samples of "
                             "a task are all the same episode")


def _agent_kind(cfg: EvalConfig) -> str:
    if cfg.agent != "auto":
        return cfg.agent
    if cfg.env == "wordle":
        return "wordle"
    if cfg.env.startswith(("http://", "https://", "ws://", "wss://")):
        return "text"
    from ..envs import load_env_class
    from ..server import MCPEnvironment

    return "tool" if issubclass(load_env_class(cfg.env), MCPEnvironment) else "text"


def _agent(kind: str, cfg: EvalConfig) -> Any:
    from ..pool import TextAgent, ToolAgent
    from .wordle import WordleAgent

    if kind == "wordle":
        return WordleAgent(cfg.constrained, order=cfg.order)
    if kind == "action":
        return ActionAgent(constrained=cfg.constrained, history=cfg.history)
    if kind == "tool":
        return ToolAgent()
    return TextAgent(parser=json_action, system_prompt="Reply with the action as one JSON object.")


def _backend(model: str) -> Any:
    from ..policy import LocalBackend, UpstreamBackend

    if model.startswith(("http://", "https://")):
        return UpstreamBackend(model)
    if not Path(model).exists():
        raise ValueError(f"model {model!r}: no such checkpoint folder (give a path or an http(s):// URL)")
    return LocalBackend(model)


def _episode_tasks(cfg: EvalConfig, kind: str) -> list[dict[str, Any]]:
    if kind != "wordle":
        return [dict(cfg.options) for _ in range(cfg.episodes)]
    from .wordle import GrpoWordleConfig

    recipe = GrpoWordleConfig(seed=cfg.seed)
    recipe.eval.words = cfg.episodes
    held, _, _ = recipe.secret_splits()
    return [{"task": word} for word in held]


def run(cfg: EvalConfig) -> dict[str, Any]:
    """Play the episodes with the model (greedy by default) and write traces and the summary."""
    from ..policy import FixedSampling, captured_policy
    from ..pool import EpisodeSpec, PoolConfig, RolloutPool
    from ..trace import TraceWriter
    from .wordle import ANY_ORDER_TOKENS, WordleGRPOSection, game_metrics

    out = Path(cfg.output_dir) / cfg.name
    if (out / "summary.json").exists():
        # the trace writer resumes a folder, so a second evaluation here would play none of its episodes again and
        # summarise nothing: refuse before anything starts
        raise ValueError(f"{out} holds a finished evaluation (summary.json): give this one another name "
                         f"(name=eval-2) or output_dir, or remove {out}")
    kind = _agent_kind(cfg)
    wordle_tokens = ANY_ORDER_TOKENS if cfg.order == "any" else WordleGRPOSection.per_turn_tokens
    tokens = cfg.per_turn_tokens or (wordle_tokens if kind == "wordle" else 64)
    beam: dict[str, Any] = {"use_beam_search": True, "n": cfg.beam_width} if cfg.beam_width else {}
    backend = FixedSampling(_backend(cfg.model), temperature=cfg.temperature, max_tokens=tokens,
                            constrained=cfg.constrained, **beam)
    pool_cfg = PoolConfig(num_actors=cfg.num_actors, sessions_per_actor=cfg.sessions_per_actor,
                          max_turns=cfg.max_turns, client="mcp" if kind == "tool" else "generic",
                          show_progress=cfg.show_progress, run_id=cfg.name)
    specs = [EpisodeSpec(f"eval-{i:04d}" if cfg.samples == 1 else f"eval-{i:04d}-{j}", task, cfg.seed + i,
                         f"eval-{i:04d}")
             for i, task in enumerate(_episode_tasks(cfg, kind)) for j in range(cfg.samples)]
    with captured_policy(backend) as served, TraceWriter(out, resume=True) as writer, \
            RolloutPool(cfg.env, served.base_url, agent=_agent(kind, cfg), config=pool_cfg, writer=writer,
                        capture=served.capture) as pool:
        rows = pool.run(specs)

    def metrics(row: Any) -> dict[str, float]:
        base = {"reward": float(row.reward or 0.0), "ok": float(row.ok), "done": float(row.done)}
        return {**base, **game_metrics(row)} if kind == "wordle" else base

    extra: dict[str, Any] = {"title": f"Evaluation of {cfg.model} on {cfg.env}", "agent": kind}
    if cfg.samples == 1:
        per_task = [metrics(r) for r in rows]
    else:
        threshold, source = _success_threshold(cfg)
        per_task, extra["tasks"] = _sampled_tasks(rows, metrics, threshold)
        extra |= {"samples": cfg.samples, "success": f"reward >= {threshold:g} ({source})"}
    result = phase_summary(per_task, resamples=cfg.bootstrap_resamples, seed=cfg.seed)
    return write_summary(out, {"eval": result}, order=["eval"], metric="reward", labels={"eval": cfg.model},
                         extra={**extra, "config": config_to_dict(cfg)}, resamples=cfg.bootstrap_resamples,
                         seed=cfg.seed)


def _success_threshold(cfg: EvalConfig) -> tuple[float, str]:
    """The success threshold and where it comes from: the user's, the catalog env's, or the default 1.0."""
    if cfg.success_threshold is not None:
        return cfg.success_threshold, "success_threshold set by the user"
    from ..envs import CATALOG

    spec = CATALOG.get(cfg.env)
    if spec is not None:
        return spec.success_threshold, f"{cfg.env}'s success threshold in the catalog"
    return 1.0, "the default for an env outside the catalog: a win or a solved task"


def _sampled_tasks(rows: list[Any], metrics: Callable[[Any], dict[str, float]],
                   threshold: float) -> tuple[list[dict[str, float]], list[dict[str, Any]]]:
    """Per task (rows grouped by ``group_id``, in order): the mean of each metric over its samples plus its pass@k
    and mean@n (the phase's values, for the intervals), and a table row naming the task for the summary."""
    groups: dict[str, list[Any]] = {}
    for row in rows:
        groups.setdefault(row.group_id, []).append(row)
    per_task, table = [], []
    for group, samples in groups.items():
        values = [metrics(r) for r in samples]
        rewards = [v["reward"] for v in values]
        wins = [r >= threshold for r in rewards]
        passes = task_pass_at_k(wins, rewards)
        per_task.append({**{k: sum(v[k] for v in values) / len(values) for k in values[0]}, **passes})
        table.append({"task": group, "reset": samples[0].task, "successes": sum(wins), **passes})
    return per_task, table


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    cfg = config_from_argv(EvalConfig, argv, module="openenv_train.recipes.eval", doc=__doc__,
                           example="model=PATH env=wordle episodes=100")
    try:
        summary = run(cfg)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out = Path(cfg.output_dir) / cfg.name
    print((out / "summary.md").read_text())
    return 0 if summary["phases"]["eval"]["ok"]["mean"] == 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
