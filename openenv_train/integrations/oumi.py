"""Oumi (PyPI ``oumi``): any env of ours as an Oumi GRPO rollout function and reward functions.

Oumi's ``TRL_GRPO`` trainer is TRL's ``GRPOTrainer``; Oumi hands it the rollout function named by
``training.grpo.rollout_function`` and the reward functions named by ``training.reward_functions``, both looked up
in Oumi's registry (``RegistryType.ROLLOUT_FUNCTION`` / ``RegistryType.REWARD_FUNCTION``). :func:`register_oumi`
puts :func:`~openenv_train.integrations.trl.make_rollout_func` there (episodes played with the trainer's live
model, every turn captured, rows written as traces) with the env's reward and any rubric's. In a module of yours::

    # my_oumi_env.py
    from openenv_train.integrations.oumi import register_oumi

    register_oumi("wordle", name="wordle", trace_dir="runs/oumi-wordle")

then list that file in ``OUMI_EXTRA_DEPS_FILE`` (Oumi imports each path it lists before it reads the registry)
and name the functions in the training YAML::

    training:
      trainer_type: TRL_GRPO
      grpo: {rollout_function: wordle, num_generations: 2, max_completion_length: 32}
      reward_functions: [wordle_env]

``echo $PWD/my_oumi_env.py > deps.txt && OUMI_EXTRA_DEPS_FILE=deps.txt oumi train -c grpo.yaml``. The dataset's
prompts become reset options as in TRL (a JSON object prompt such as ``{"task": "crane"}``; see
:func:`~openenv_train.integrations.trl.default_task`).

Oumi 0.9 pins ``torch<2.13``, ``trl<1.7``, ``transformers<5.17`` and ``peft<0.20``, older than this project's
training extras: install it in a venv of its own (from a checkout of this project, ``pip install -e '.[oumi]'``,
which keeps Oumi's pins). TRL 1.6, the one Oumi's pins resolve to, calls
``rollout_func(prompts, trainer)`` and passes ``env_mask`` and the extra fields on as TRL 1.16 does.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import OpenEnvTrainError
from ..pool import AgentLoop, PoolConfig
from ..trace import TraceWriter
from .trl import PoolFactory, TrlRolloutFunc, default_task, field_reward, make_rollout_func, rubric_rewards

if TYPE_CHECKING:
    from ..policy import LocalConfig
    from ..rubrics import Rubric

__all__ = ["INSTALL", "OumiError", "OumiNotInstalled", "OumiRegistration", "import_oumi_registry",
           "make_oumi_functions", "register_oumi"]

INSTALL = ("pip install 'oumi==0.9' in a venv of its own, with this project (from a checkout: pip install -e "
           "'.[oumi]'): Oumi 0.9 pins torch<2.13, trl<1.7, transformers<5.17 and peft<0.20, older than this "
           "project's training extras")


class OumiError(OpenEnvTrainError, ValueError):
    """A registration Oumi refuses (e.g. a name already taken); the message names the fix."""


class OumiNotInstalled(OpenEnvTrainError, ImportError):
    """``oumi`` is not installed; the message gives the install line and the separate-venv advice."""


def import_oumi_registry() -> tuple[Any, Any]:
    """Oumi's ``REGISTRY`` and ``RegistryType`` (``oumi.core.registry``).

    Raises:
        OumiNotInstalled: oumi is not installed (the message gives the install line).
    """
    try:
        from oumi.core.registry import REGISTRY, RegistryType
    except ImportError as exc:
        raise OumiNotInstalled(f"this needs Oumi: {INSTALL} ({type(exc).__name__}: {exc})") from exc
    return REGISTRY, RegistryType


@dataclass
class OumiRegistration:
    """What :func:`register_oumi` put in Oumi's registry, and the live objects behind it.

    Attributes:
        rollout_function: the name for ``training.grpo.rollout_function``.
        reward_functions: the names for ``training.reward_functions`` (the env's reward first).
        reward_weights: their weights, in the same order (for ``training.trainer_kwargs.reward_weights``).
        rollout: the TRL rollout function (its ``last_rows`` are the latest batch's TraceRows).
        writer: the trace writer, or None without ``trace_dir``/``writer``.
        functions: each reward function by its registry name.

    Calling it is TRL's ``rollout_func(prompts, trainer)``: this is what Oumi's registry holds under
    ``rollout_function``.
    """

    rollout_function: str
    reward_functions: list[str]
    reward_weights: list[float]
    rollout: TrlRolloutFunc
    writer: TraceWriter | None = None
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict, repr=False)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """TRL's ``rollout_func(prompts, trainer)``: the batch's episodes; their rows are flushed to the writer."""
        out = self.rollout(prompts, trainer)
        if self.writer is not None:
            if not isinstance(self.rollout.env, str):  # a pool's runner leaves writing to the caller
                for row in self.rollout.last_rows:
                    self.writer.write(row)
            self.writer.flush()
        return out

    def close(self) -> None:
        """Stop the env server and the policy endpoint, and close the writer (also run at interpreter exit)."""
        try:
            self.rollout.close()
        finally:
            if self.writer is not None:
                self.writer.close()


def make_oumi_functions(env: str | PoolFactory, *, name: str = "openenv",
                        rubrics: Mapping[str, float] | Sequence[str | Rubric] | None = None,
                        trace_dir: str | Path | None = None, writer: TraceWriter | None = None,
                        config: PoolConfig | None = None, agent: AgentLoop | None = None,
                        task_fn: Callable[[Any], dict[str, Any]] = default_task, per_turn_tokens: int | None = None,
                        local: LocalConfig | None = None) -> OumiRegistration:
    """The rollout function and reward functions :func:`register_oumi` registers, without touching Oumi.

    Oumi passes them on as ``GRPOTrainer(rollout_func=registration, reward_funcs=[registration.functions[n] for
    n in registration.reward_functions])``; this works with TRL's own ``GRPOTrainer`` as well. Arguments as in
    :func:`register_oumi`; the caller closes the registration.

    Raises:
        OumiError: ``name`` is empty.
        ValueError: both ``trace_dir`` and ``writer``, or a bad rubric weight.
    """
    if not name.strip():
        raise OumiError("register_oumi: name must be a non-empty registry name, e.g. name='wordle'")
    if trace_dir is not None and writer is not None:
        raise ValueError("register_oumi: give trace_dir or writer, not both")
    rewards: dict[str, Callable[..., Any]] = {f"{name}_env": field_reward("env")}
    weights = [1.0]
    if rubrics is not None:
        funcs, rubric_weights = rubric_rewards(rubrics)
        for func, weight in zip(funcs, rubric_weights, strict=True):
            rewards[f"{name}_{func.__name__}"] = func
            weights.append(weight)
    for reward_name, func in rewards.items():
        func.__name__ = reward_name  # TRL logs rewards/<__name__>/mean: the name the YAML lists
    if trace_dir is not None:
        writer = TraceWriter(trace_dir)
    rollout = make_rollout_func(env, agent=agent, config=config, writer=writer, task_fn=task_fn,
                                per_turn_tokens=per_turn_tokens, local=local)
    return OumiRegistration(name, list(rewards), weights, rollout, writer, dict(rewards))


def register_oumi(env: str | PoolFactory, *, name: str = "openenv",
                  rubrics: Mapping[str, float] | Sequence[str | Rubric] | None = None,
                  trace_dir: str | Path | None = None, writer: TraceWriter | None = None,
                  config: PoolConfig | None = None, agent: AgentLoop | None = None,
                  task_fn: Callable[[Any], dict[str, Any]] = default_task, per_turn_tokens: int | None = None,
                  local: LocalConfig | None = None) -> OumiRegistration:
    """Register ``env``'s rollout function and reward functions in Oumi's registry.

    Registers ``name`` as a ``ROLLOUT_FUNCTION`` (:func:`~openenv_train.integrations.trl.make_rollout_func` over
    ``env``, its rows flushed to the writer after every batch), ``{name}_env`` as a ``REWARD_FUNCTION`` (the env's
    own reward of each episode) and ``{name}_{rubric}`` for each of ``rubrics`` (see
    :func:`~openenv_train.integrations.trl.rubric_rewards`). The env server and policy endpoint start on the
    first batch and stop at interpreter exit (or :meth:`OumiRegistration.close`).

    Args:
        env: catalog name, ``module:Class``, env folder or server URL (episodes in the trainer's process, one env
            server subprocess), or a :data:`~openenv_train.integrations.trl.PoolFactory` for a Ray pool.
        name: the rollout function's registry name; reward functions are named after it. Oumi lowercases names.
        rubrics: rubric names (optionally ``name#component``) to weights, or a list of names/rubrics.
        trace_dir: write every episode's TraceRow here (a :class:`~openenv_train.trace.TraceWriter`).
        writer: a writer of yours instead of ``trace_dir``.
        config: pool options (``max_turns``, ``run_id``, ...); default one actor.
        agent: the agent loop (default :class:`~openenv_train.pool.TextAgent`).
        task_fn: dataset prompt -> reset options (default: a JSON object prompt).
        per_turn_tokens: completion tokens per model turn (default the trainer's ``max_completion_length``).
        local: options of the :class:`~openenv_train.policy.LocalBackend` serving the trainer's model.

    Returns:
        The names to put in Oumi's YAML, and the rollout function and writer behind them.

    Raises:
        OumiNotInstalled: oumi is not installed (the message gives the install line).
        OumiError: ``name`` is empty, or one of the names is already registered (pick another ``name``).
        ValueError: both ``trace_dir`` and ``writer``, or a bad rubric weight.
    """
    registry, kinds = import_oumi_registry()
    reg = make_oumi_functions(env, name=name, rubrics=rubrics, trace_dir=trace_dir, writer=writer, config=config,
                              agent=agent, task_fn=task_fn, per_turn_tokens=per_turn_tokens, local=local)
    wanted = [(name, kinds.ROLLOUT_FUNCTION)] + [(n, kinds.REWARD_FUNCTION) for n in reg.reward_functions]
    taken = [n for n, kind in wanted if registry.contains(n, kind)]
    if taken:
        if trace_dir is not None and reg.writer is not None:
            reg.writer.close()  # ours; a writer the caller gave stays open
        raise OumiError(f"register_oumi: {taken} already in Oumi's registry (names are case-insensitive): call "
                        "register_oumi once per process, or pass another name=")
    registry.register(name, kinds.ROLLOUT_FUNCTION, reg)
    for reward_name in reg.reward_functions:
        registry.register(reward_name, kinds.REWARD_FUNCTION, reg.functions[reward_name])
    atexit.register(reg.close)
    return reg
