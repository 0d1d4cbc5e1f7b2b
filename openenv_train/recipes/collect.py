"""Collect rollouts with the Ray pool and write them as TrainingTrace rows to a run directory.

Runs locally (a local Ray) or as a Ray job on a cluster::

    python -m openenv_train.recipes.collect [--config configs/collect.yaml] [key=value ...]
    ray job submit --address http://HEAD:8265 -- python -m openenv_train.recipes.collect output_dir=/shared/runs

Output: ``<output_dir>/<name>/traces/*.parquet`` (resumable: written episodes are skipped) and ``summary.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._config import config_from_argv

__all__ = ["CollectConfig", "RandomPolicy", "main", "random_action", "run"]


@dataclass
class CollectConfig:
    """Options of the collection job."""

    name: str = "collect"
    output_dir: str = "runs"
    env: str = "wordle"
    """Catalog name, ``module:Class``, or a server URL."""
    policy: str = "wordle-solver"
    """``wordle-solver``, ``random`` (random valid actions), ``module:callable`` (scripted), a local model folder,
    or an OpenAI-compatible URL."""
    tasks: int = 8
    """Groups to run; task i resets with seed ``seed + i``."""
    num_generations: int = 2
    seed: int = 0
    num_actors: int = 2
    sessions_per_actor: int = 4
    max_turns: int = 12
    episode_timeout_s: float = 120.0
    max_retries: int = 2
    ray_address: str | None = None
    show_progress: bool = True
    pool: dict[str, Any] = field(default_factory=dict)
    """More :class:`~openenv_train.pool.PoolConfig` fields (``pool={max_in_flight: 16}``); not those set above."""

    def __post_init__(self) -> None:
        from ..pool import PoolConfig

        if self.tasks < 1 or self.num_generations < 1:
            raise ValueError(f"tasks and num_generations must be >= 1, got {self.tasks} and {self.num_generations}")
        known = [f.name for f in dataclasses.fields(PoolConfig)]
        unknown = sorted(set(self.pool) - set(known))
        if unknown:
            raise ValueError(f"unknown option(s) {', '.join('pool.' + k for k in unknown)}; options of pool: "
                             f"{', '.join(known)}")
        # the options above (and the run's name, the rows' run_id) go to the pool too: one place for each
        top = {f.name: f.name for f in dataclasses.fields(self) if f.name in known} | {"run_id": "name"}
        twice = sorted(set(self.pool) & set(top))
        if twice:
            raise ValueError(f"pool.{twice[0]} is the recipe's option {top[twice[0]]}: set {top[twice[0]]} instead")


def random_action(schema: dict[str, Any], *, seed: int | None = None, rng: random.Random | None = None) -> Any:
    """A random value valid under the JSON schema ``schema`` (the subset pydantic writes: types, enums,
    bounds, ``$ref``/``$defs``, ``anyOf``/``oneOf``, defaults).

    Example:
        >>> random_action({"type": "object", "properties": {"delta": {"type": "integer", "minimum": 1, "maximum": 1}},
        ...                "required": ["delta"]}, seed=0)
        {'delta': 1}
    """
    rng = rng or random.Random(seed)
    defs = schema.get("$defs", {})

    def value(node: dict[str, Any]) -> Any:
        if "$ref" in node:
            return value(defs[node["$ref"].rsplit("/", 1)[-1]])
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return rng.choice(node["enum"])
        variants = node.get("anyOf") or node.get("oneOf")
        if variants:
            return value(rng.choice([v for v in variants if v.get("type") != "null"] or variants))
        kind = node.get("type", "object")
        if kind == "integer":
            low, high = node.get("minimum", -10), node.get("maximum", 10)
            return rng.randint(int(low), max(int(low), int(high)))
        if kind == "number":
            return rng.uniform(node.get("minimum", -10.0), node.get("maximum", 10.0))
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "string":
            size = rng.randint(node.get("minLength", 1), max(node.get("minLength", 1), node.get("maxLength", 8)))
            return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(size))
        if kind == "array":
            return [value(node.get("items", {})) for _ in range(node.get("minItems", rng.randint(0, 2)))]
        if kind == "null":
            return None
        required = set(node.get("required", []))
        return {k: value(v) for k, v in node.get("properties", {}).items() if k in required or k != "metadata"}

    return value(schema)


class RandomPolicy:
    """``policy(observation) -> action``: random valid actions from the action schema, or random tool calls
    (with random arguments from each tool's input schema) for an MCP env."""

    def __init__(self, action_schema: dict[str, Any], tools: list[dict[str, Any]] | None = None, seed: int = 0) -> None:
        self.action_schema, self.tools, self.rng = action_schema, tools, random.Random(seed)

    def __call__(self, observation: Any) -> Any:
        if self.tools:
            tool = self.rng.choice(self.tools)
            return {"type": "call_tool", "tool_name": tool["name"],
                    "arguments": random_action(tool.get("input_schema") or {}, rng=self.rng)}
        return random_action(self.action_schema, rng=self.rng)


def _env_interface(env: str) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """The action schema and (for an MCP env) the tools of ``env``: a catalog name, module:Class or URL."""
    from ..pool import fleet_urls

    env = (fleet_urls(env) or [env])[0]  # a fleet's servers serve one env: ask the first
    if env.startswith(("http://", "https://")):
        import urllib.request

        from ..client import Endpoint
        from ..integrations import action_schema

        base = env.rstrip("/")
        schema = action_schema(Endpoint(base), timeout_s=10)
        request = urllib.request.Request(f"{base}/mcp", data=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            tools = (json.loads(reply.read()).get("result") or {}).get("tools")
        return schema, [{"name": t["name"], "input_schema": t.get("inputSchema") or t.get("input_schema")}
                        for t in tools or []] or None
    from ..envs import load_env_class
    from ..server import MCPEnvironment

    env_cls = load_env_class(env)
    if issubclass(env_cls, MCPEnvironment):
        instance = env_cls()
        try:
            return {}, [{"name": t.name, "input_schema": t.input_schema} for t in instance.list_tools()]
        finally:
            instance.close()
    return env_cls.spec_info().schema()["action"], None


def _policy(spec: str, env: str = "wordle", seed: int = 0) -> Any:
    """``wordle-solver``, ``random``, a local model folder (returned as a Path: run() serves it), ``module:callable``
    or an OpenAI-compatible URL."""
    if spec.startswith(("http://", "https://")):
        return spec
    if spec == "wordle-solver":
        from ..envs.wordle.solver import WordleSolver

        return WordleSolver().act
    if spec == "random":
        return RandomPolicy(*_env_interface(env), seed=seed)
    if Path(spec).is_dir():
        return Path(spec)
    module, sep, attr = spec.partition(":")
    if not sep:
        raise ValueError(f"policy {spec!r}: use 'wordle-solver', 'random', a model folder, 'module:callable' "
                         "or an http(s):// URL")
    return getattr(importlib.import_module(module), attr)


def run(cfg: CollectConfig) -> dict[str, Any]:
    """Run every episode, write the traces, return the summary."""
    from ..pool import PoolConfig, RolloutPool, make_groups
    from ..trace import TraceWriter

    out = Path(cfg.output_dir) / cfg.name
    pool_cfg = PoolConfig(num_actors=cfg.num_actors, sessions_per_actor=cfg.sessions_per_actor, max_turns=cfg.max_turns,
                          episode_timeout_s=cfg.episode_timeout_s, max_retries=cfg.max_retries, run_id=cfg.name,
                          ray_address=cfg.ray_address, show_progress=cfg.show_progress, **cfg.pool)
    specs = make_groups(range(cfg.seed, cfg.seed + cfg.tasks), cfg.num_generations)
    policy = _policy(cfg.policy, cfg.env, cfg.seed)
    with contextlib.ExitStack() as stack:
        capture = None
        if isinstance(policy, Path):  # a local model: serve it on loopback and record its calls into the rows
            from ..policy import LocalBackend, captured_policy

            served = stack.enter_context(captured_policy(LocalBackend(str(policy))))
            capture, policy = served.capture, served.base_url
        writer = stack.enter_context(TraceWriter(out, resume=True))
        pool = stack.enter_context(RolloutPool(cfg.env, policy, config=pool_cfg, writer=writer, capture=capture))
        rows = pool.run(specs)
        metrics = pool.metrics
    summary = {"config": asdict(cfg), "metrics": metrics.summary(), "rows": len(rows),
               "mean_reward": sum(r.reward or 0.0 for r in rows) / len(rows) if rows else None, "output": str(out)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    summary["table"] = metrics.table()
    return summary


def main(argv: list[str] | None = None) -> int:
    cfg = config_from_argv(CollectConfig, argv, module="openenv_train.recipes.collect", doc=__doc__,
                           example="tasks=32 num_actors=4")
    summary = run(cfg)
    from rich.console import Console

    Console().print(summary.pop("table"))
    print(f"wrote {summary['rows']} rows to {summary['output']}/traces (failed: {summary['metrics']['failed']})")
    return 0 if summary["metrics"]["failed"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
