"""The GRPO recipe over a mix of envs: the ``envs`` setting read into :class:`~openenv_train.pool.MixEnv` s, each
env's training and held-out tasks (its Task API's splits where it serves one, else seeds), per-env reward scales,
per-env metrics and the mix's summary.

Reward normalisation: every GRPO group is one task of one env, so an env's reward offset cancels in its groups'
advantages and only its scale differs between envs. Each episode's reward is divided by its env's running standard
deviation (every episode of that env so far, this step's included). Under ``grpo.scale_rewards: group`` (the
default) that changes nothing, as each group is divided by its own deviation anyway; under ``batch`` or ``none``
(Dr. GRPO, which avoids the group's noisy deviation) it keeps an env that pays in hundreds from drowning one that
pays in [-1, 1]. ``mix_normalise: none`` turns it off.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..pool import MIX_KEY, MixEnv, weighted_schedule
from ._stats import paired_difference

__all__ = ["HARBOR_FOLDER_ENV", "EnvRewardScale", "EnvTasks", "discover_tasks", "harbor_folder", "held_out_prompts",
           "mix_difference", "mix_markdown", "mix_name", "parse_mix", "per_env_means", "train_prompts"]

_ENTRY_KEYS = {"weight", "options", "max_turns", "max_tokens", "request", "reply_field"}
#: The env that serves a folder of Harbor tasks (a mix entry that is such a folder plays through it).
HARBOR_FOLDER_ENV = "openenv_train.harbor:HarborFolderEnvironment"


def parse_mix(envs: Mapping[str, Any], *, make_agent: Callable[[str], Any] | None = None) -> list[MixEnv]:
    """The ``envs`` setting (``{catch: 1, tic_tac_toe: {weight: 2, options: {opponent: first}, max_turns: 9}}``)
    as the mix's envs, named by their last path segment. Each key is an env: a catalog name, ``module:Class``, a
    server URL, or a folder of Harbor tasks (or one task folder: it plays through :data:`HARBOR_FOLDER_ENV`, its
    folder a reset option, its server outside the sandbox, replies as shell commands). Each value is a weight, or
    a mapping of ``weight``, ``options`` (reset options), ``max_turns``, ``max_tokens`` (completion tokens per model
    call), ``request`` (more request fields, e.g. ``{guided_regex: "[0-9]+"}``) and ``reply_field`` (the action
    field a plain-text reply fills: ``answer`` for reasoning_gym; ``make_agent(reply_field)`` builds that env's
    agent, where given).

    >>> [(e.name, e.weight) for e in parse_mix({"catch": 1, "http://127.0.0.1:8001/": 2, "pkg.games:Catch": 1})]
    [('catch', 1.0), ('127.0.0.1-8001', 2.0), ('Catch', 1.0)]
    >>> parse_mix({"reasoning_gym": {"max_tokens": 6, "reply_field": "answer"}})[0].request_fields()
    {'max_tokens': 6}

    Raises:
        ValueError: no env, an entry that is neither a number nor such a mapping, or two envs of one name.
    """
    if not isinstance(envs, Mapping) or not envs:
        raise ValueError("envs must map each env to a weight, e.g. envs='{catch: 1, tic_tac_toe: 1, blackjack: 1}'")
    out = []
    for env, entry in envs.items():
        spec: Any = {"weight": entry} if isinstance(entry, int | float) and not isinstance(entry, bool) else entry
        if not isinstance(spec, Mapping) or set(spec) - _ENTRY_KEYS:
            raise ValueError(f"envs.{env}: give a weight (a number) or a mapping of {sorted(_ENTRY_KEYS)}; got {entry!r}")
        weight, options, turns = spec.get("weight", 1.0), spec.get("options") or {}, spec.get("max_turns")
        tokens, request, reply = spec.get("max_tokens"), spec.get("request") or {}, spec.get("reply_field")
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ValueError(f"envs.{env}.weight must be a number > 0, got {weight!r}")
        if not isinstance(options, Mapping) or (turns is not None and (not isinstance(turns, int) or turns < 1)):
            raise ValueError(f"envs.{env}: options must be a mapping of reset options and max_turns an integer >= 1; "
                             f"got options={options!r}, max_turns={turns!r}")
        if not isinstance(request, Mapping) or (reply is not None and not isinstance(reply, str)):
            raise ValueError(f"envs.{env}: request must be a mapping of request fields and reply_field an action "
                             f"field's name; got request={request!r}, reply_field={reply!r}")
        target, sandbox, folder = str(env), None, harbor_folder(str(env))
        if folder is not None:
            target, sandbox, options = HARBOR_FOLDER_ENV, False, {"tasks_dir": str(folder), **options}
            reply = reply or "command"
        agent = make_agent(reply) if make_agent is not None and reply else None
        try:
            out.append(MixEnv(_name(str(env)), target, float(weight), dict(options), turns, tokens, dict(request),
                              agent, sandbox))
        except ValueError as exc:
            raise ValueError(f"envs.{env}: {exc}") from None
    names = [e.name for e in out]
    if len(set(names)) != len(names):
        raise ValueError(f"envs: two envs have one name in {names}; give each env once")
    return out


def harbor_folder(env: str) -> Path | None:
    """The folder, when ``env`` is a Harbor task folder (it has ``task.toml``) or a folder of them; else None."""
    if "://" in env or ":" in env:
        return None
    path = Path(env).expanduser()
    if not path.is_dir():
        return None
    if (path / "task.toml").is_file() or any((c / "task.toml").is_file() for c in path.iterdir() if c.is_dir()):
        return path.resolve()
    return None


def _name(env: str) -> str:
    if "://" in env:
        return env.split("://", 1)[1].strip("/").replace(":", "-").replace("/", "-")
    if ":" in env:  # module:Class: the class
        return env.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    return env.rstrip("/").rsplit("/", 1)[-1]


def mix_name(mix: Sequence[MixEnv]) -> str:
    """The run's name for a mix: ``grpo-mix-<env>-<env>...``.

    >>> mix_name(parse_mix({"catch": 1, "blackjack": 1}))
    'grpo-mix-catch-blackjack'
    """
    return "grpo-mix-" + "-".join(e.name for e in mix)


@dataclass(frozen=True)
class EnvTasks:
    """Where an env's training and held-out tasks come from: splits of its Task API, or reset seeds."""

    train_split: str | None = None
    test_split: str | None = None
    train_size: int = 0
    test_size: int = 0

    @property
    def from_task_api(self) -> bool:
        """Whether the env's server declared both a training and a held-out split."""
        return self.train_split is not None and self.test_split is not None


def discover_tasks(env: str | list[str]) -> EnvTasks:
    """Ask the env's server for its splits (a URL directly; a catalog name or ``module:Class`` through a short-lived
    in-process server): the first split of type ``train`` and the first of type ``test``. An env without a Task API
    (or without both kinds) gets seeds: :class:`EnvTasks` of no split."""
    from .. import envs as catalog
    from ..client import TaskClient, TasksNotSupported
    from ..launch import Endpoint, InProcessProvider

    del catalog  # imported for its side effect: in-process servers find catalog names through it

    async def ask() -> EnvTasks:
        provider = None
        if isinstance(env, list) or "://" in env:
            endpoint = Endpoint(env[0] if isinstance(env, list) else env)
        else:
            provider = InProcessProvider(env)
            endpoint = await provider.start()
        try:
            tasks = TaskClient(endpoint)
            try:
                splits = await tasks.list_splits()
            except TasksNotSupported:
                return EnvTasks()
            train = next((s["name"] for s in splits if s.get("type") == "train"), None)
            test = next((s["name"] for s in splits if s.get("type") == "test"), None)
            if train is None or test is None:
                return EnvTasks()
            return EnvTasks(train, test, await tasks.num_tasks(train), await tasks.num_tasks(test))
        finally:
            if provider is not None:
                await provider.stop()

    return asyncio.run(ask())


def train_prompts(mix: Sequence[MixEnv], tasks: Mapping[str, EnvTasks], n: int, *, seed: int = 0,
                  seed_limit: int) -> list[dict[str, Any]]:
    """``n`` training tasks (one per GRPO group) spread over the mix by weight (:func:`~openenv_train.pool.
    weighted_schedule`): each env's train split in a shuffled order (``seed``), or its seeds below ``seed_limit``.

    >>> mix = parse_mix({"catch": 1, "blackjack": 1})
    >>> for task in train_prompts(mix, {"catch": EnvTasks("train", "test", 10, 5), "blackjack": EnvTasks()}, 3,
    ...                           seed_limit=100):
    ...     print(task)
    {'env': 'catch', 'split': 'train', 'index': 6}
    {'env': 'blackjack', 'seed': 0}
    {'env': 'catch', 'split': 'train', 'index': 9}
    """
    rng = random.Random(seed)
    counters = dict.fromkeys((e.name for e in mix), 0)
    orders: dict[str, list[int]] = {}
    out: list[dict[str, Any]] = []
    for name in weighted_schedule({e.name: e.weight for e in mix}, n):
        k, counters[name] = counters[name], counters[name] + 1
        known = tasks[name]
        if known.from_task_api:
            if name not in orders:  # a split of a million seeds is sampled, not shuffled whole
                orders[name] = rng.sample(range(known.train_size), min(known.train_size, n))
            order = orders[name]
            out.append({MIX_KEY: name, "split": known.train_split, "index": order[k % len(order)]})
        else:
            if k >= seed_limit:
                raise ValueError(f"env {name!r}: {k + 1} training seeds would reach the held-out ones from "
                                 f"eval.seed={seed_limit}: raise eval.seed")
            out.append({MIX_KEY: name, "seed": k})
    return out


def held_out_prompts(env: MixEnv, tasks: EnvTasks, episodes: int, first_seed: int) -> list[dict[str, Any]]:
    """The env's held-out evaluation tasks: the first ``episodes`` of its test split (all of it when smaller), or
    seeds from ``first_seed``."""
    if tasks.from_task_api:
        return [{MIX_KEY: env.name, "split": tasks.test_split, "index": i} for i in range(min(episodes, tasks.test_size))]
    return [{MIX_KEY: env.name, "seed": first_seed + i} for i in range(episodes)]


class EnvRewardScale:
    """Per-env running reward scale (Welford's standard deviation over every episode seen): rewards are divided
    by it (see the module's docstring for why); before two distinct rewards an env's scale is 1.

    >>> scale = EnvRewardScale()
    >>> scale.normalise(["a", "a", "b", "b"], [0.0, 100.0, -1.0, 1.0])
    [0.0, 1.414213562373095, -0.7071067811865475, 0.7071067811865475]
    """

    def __init__(self, floor: float = 1e-3) -> None:
        self.floor = floor
        self._stats: dict[str, tuple[int, float, float]] = {}  # env -> (count, mean, sum of squared deviations)

    def update(self, env: str, reward: float) -> None:
        """Count one episode's reward."""
        n, mean, m2 = self._stats.get(env, (0, 0.0, 0.0))
        n += 1
        delta = reward - mean
        mean += delta / n
        self._stats[env] = (n, mean, m2 + delta * (reward - mean))

    def scale(self, env: str) -> float:
        """The env's reward standard deviation so far (at least ``floor``; 1 before it is known)."""
        n, _, m2 = self._stats.get(env, (0, 0.0, 0.0))
        std = math.sqrt(m2 / (n - 1)) if n > 1 else 0.0
        return max(std, self.floor) if std > 0 else 1.0

    def normalise(self, envs: Sequence[str], rewards: Sequence[float | None]) -> list[float | None]:
        """Count this batch, then each reward divided by its env's scale (None stays None: a failed episode)."""
        for env, reward in zip(envs, rewards, strict=True):
            if reward is not None:
                self.update(env, float(reward))
        return [None if r is None else float(r) / self.scale(env) for env, r in zip(envs, rewards, strict=True)]

    def scales(self) -> dict[str, float]:
        """Every env's current scale (for the metrics)."""
        return {env: self.scale(env) for env in self._stats}


def per_env_means(rows: Sequence[Any], env_of: Callable[[Any], str],
                  row_metrics: Callable[[Any], Mapping[str, float]]) -> dict[str, float]:
    """``{"<env>/<metric>": mean}`` of each env's rows (failed episodes counted: ``<env>/failed``).

    >>> from types import SimpleNamespace as Row
    >>> rows = [Row(env="a", r=1.0, ok=True), Row(env="a", r=0.0, ok=False), Row(env="b", r=-1.0, ok=True)]
    >>> per_env_means(rows, lambda row: row.env, lambda row: {"reward": row.r})
    {'a/reward': 0.5, 'a/failed': 1.0, 'b/reward': -1.0, 'b/failed': 0.0}
    """
    groups: dict[str, list[Any]] = {}
    for row in rows:
        groups.setdefault(env_of(row), []).append(row)
    out: dict[str, float] = {}
    for env, members in groups.items():
        each = [row_metrics(row) for row in members]
        out.update({f"{env}/{k}": sum(m[k] for m in each) / len(each) for k in each[0]})
        out[f"{env}/failed"] = float(sum(not row.ok for row in members))
    return out


def mix_difference(after: Mapping[str, Sequence[float]], before: Mapping[str, Sequence[float]], *,
                   resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Per env the paired difference (same tasks before and after) and the mix's: the mean over envs of their
    mean differences (each env counts once, whatever its number of tasks), its interval from resampling every
    env's tasks independently.

    >>> d = mix_difference({"a": [1.0, 1.0], "b": [0.0, 0.0, 0.0]}, {"a": [0.0, 0.0], "b": [0.0, 0.0, 0.0]})
    >>> d["mix"]["mean"], d["envs"]["a"]["mean"]
    (0.5, 1.0)
    """
    envs = {env: paired_difference(after[env], before[env], resamples=resamples, seed=seed) for env in after}
    diffs = {env: [a - b for a, b in zip(after[env], before[env], strict=True)] for env in after}
    rng = random.Random(seed)
    means = sorted(sum(sum(rng.choice(d) for _ in d) / len(d) for d in diffs.values()) / len(diffs)
                   for _ in range(resamples))
    point = sum(e["mean"] for e in envs.values()) / len(envs)
    low, high = means[round(0.025 * (resamples - 1))], means[round(0.975 * (resamples - 1))]
    return {"envs": envs, "mix": {"mean": point, "ci_low": low, "ci_high": high, "n_envs": len(envs)}}



def mix_markdown(summary: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """``summary.md`` of a mix: per evaluation (sampled, greedy, beam) a table of each env's untrained and trained mean
    reward and their paired difference, and the mix's mean (each env counted once).

    >>> stat = {"mean": 0.5, "ci_low": 0.25, "ci_high": 0.75}
    >>> md = mix_markdown({"title": "T", "grpo": {"envs": {"catch": {"untrained": stat, "trained": stat,
    ...     "paired": stat}}, "mix": {"untrained": 0.5, "trained": 0.5, "paired": stat}}}, {"grpo": "after GRPO"})
    >>> md.splitlines()[6]
    '| catch | 0.500 [0.250, 0.750] | 0.500 [0.250, 0.750] | +0.500 [0.250, 0.750] | yes |'
    """
    def fmt(stat: Mapping[str, float], sign: str = "") -> str:
        return f"{stat['mean']:{sign}.3f} [{stat['ci_low']:.3f}, {stat['ci_high']:.3f}]"

    lines = [f"# {summary.get('title', 'GRPO on a mix')}", ""]
    for phase in ("grpo", "grpo_greedy", "grpo_beam"):
        result = summary.get(phase)
        if not result:
            continue
        lines += [f"Held-out mean reward per env, {labels.get(phase, phase)} (95% bootstrap CIs; the paired "
                  "difference is on the same tasks):", "",
                  "| env | untrained | trained | paired difference | CI low > 0 |", "|---|---|---|---|---|"]
        for env, row in result["envs"].items():
            lines.append(f"| {env} | {fmt(row['untrained'])} | {fmt(row['trained'])} | {fmt(row['paired'], '+')} | "
                         f"{'yes' if row['paired']['ci_low'] > 0 else 'no'} |")
        mix = result["mix"]
        lines += [f"| **mix** (mean over envs) | {mix['untrained']:.3f} | {mix['trained']:.3f} | "
                  f"{fmt(mix['paired'], '+')} | {'yes' if mix['paired']['ci_low'] > 0 else 'no'} |", ""]
    for key in ("held_out_episodes_per_env", "budgets", "seconds_this_session", "run"):
        if key in summary:
            lines.append(f"- {key}: {json.dumps(summary[key]) if not isinstance(summary[key], str) else summary[key]}")
    return "\n".join(lines) + "\n"
