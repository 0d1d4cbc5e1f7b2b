"""``make_rollout_func``: TRL GRPOTrainer's ``rollout_func`` over our episodes, with the trainer's live model.

TRL 1.16 calls ``rollout_func(prompts, trainer)`` with the batch's prompts (each already repeated
``num_generations`` times, consecutively) and expects ``prompt_ids``, ``completion_ids`` and ``logprobs`` per
item; ``env_mask`` (1 model token, 0 env token) becomes the loss mask, and every other key reaches the reward
functions as a keyword argument.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

from ...pool import AgentLoop, EpisodeSpec, MixedPool, PoolConfig, RolloutPool
from ...trace import CaptureStore, TraceRow, TraceWriter
from .._flatten import FlatEpisode, flatten_turns
from ._allowed import constrained_positions
from ._turn_credit import TurnRewards, turn_credit
from ._turn_rows import TrainedTurns, TurnRow, turn_rows

if TYPE_CHECKING:
    from ...policy import LocalConfig

__all__ = ["PoolFactory", "TrlRolloutFunc", "default_task", "make_rollout_func", "rollout_fields", "trainer_sampling"]


class _Runner(Protocol):
    def run(self, specs: Sequence[EpisodeSpec]) -> list[TraceRow]: ...

    def close(self) -> None: ...


#: ``factory(policy_base_url, capture) -> pool``: a started :class:`~openenv_train.pool.RolloutPool` (or
#: anything with ``run(specs)``) whose policy is that URL and whose capture store is ``capture``.
PoolFactory = Callable[[str, CaptureStore], Any]


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt:
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        content = (users or prompt)[-1].get("content", "")
        return content if isinstance(content, str) else json.dumps(content, default=str)
    return ""


def default_task(prompt: Any) -> dict[str, Any]:
    """The episode's reset options from a dataset prompt: its (last user) text when that is a JSON object.

    >>> default_task('{"task": "crane"}'), default_task([{"role": "user", "content": "play"}])
    ({'task': 'crane'}, {})
    """
    try:
        task = json.loads(_prompt_text(prompt))
    except ValueError:
        return {}
    return task if isinstance(task, dict) else {}


def trainer_sampling(args: Any, per_turn_tokens: int | None = None) -> dict[str, Any]:
    """The sampling options of a ``GRPOConfig`` as policy-endpoint options (what every episode samples with).

    >>> from types import SimpleNamespace
    >>> trainer_sampling(SimpleNamespace(temperature=0.7, top_p=0.9, top_k=0, max_completion_length=64), 16)
    {'temperature': 0.7, 'top_p': 0.9, 'top_k': 0, 'max_tokens': 16}
    """
    return {"temperature": float(getattr(args, "temperature", 1.0)), "top_p": float(getattr(args, "top_p", 1.0)),
            "top_k": int(getattr(args, "top_k", 0) or 0),
            "max_tokens": int(per_turn_tokens or args.max_completion_length)}


class _PoolRunner:
    """A Ray pool behind the same ``run``/``backend`` face as :class:`~openenv_train.integrations.LocalRunner`.

    The trainer's live model answers through a policy endpoint with the trainer's sampling options (the
    endpoint fixes them, so the pool's actors need not know them). With ``server`` given (a pool already
    pointed at it) that endpoint is reused; otherwise one is started and ``factory`` builds the pool.
    """

    def __init__(self, pool: Any, model: Any, tokenizer: Any, sampling: dict[str, Any], *,
                 server: Any = None, policy_url: str | None = None, local: LocalConfig | None = None,
                 agent_temperature: bool = False, serve: Callable[[Any], Any] | None = None,
                 caller_sets: Sequence[str] = ()) -> None:
        from ...policy import FixedSampling, LocalBackend, UpstreamBackend, captured_policy

        self.backend: Any = UpstreamBackend(policy_url) if policy_url else LocalBackend(model, tokenizer,
                                                                                          config=local)
        chosen = (*caller_sets, *(("temperature",) if agent_temperature else ()))
        served = FixedSampling(self.backend, caller_may_set=chosen, **sampling)
        if serve is not None:
            served = serve(served)
        self.own_server = server is None
        if server is None:
            policy = captured_policy(served).__enter__()
            self.capture, self.server = policy.capture, policy.server
            self.pool = pool(policy.base_url, self.capture)
        else:
            self.server, self.pool = server, pool
            self.server.replace_backend(served)

    def run(self, specs: Sequence[EpisodeSpec]) -> list[TraceRow]:
        if hasattr(self.pool, "set_policy_version") and self.backend.version is not None:
            self.pool.set_policy_version(self.backend.version)
        if isinstance(self.pool, RolloutPool | MixedPool):  # a resumed step's rows written before the stop are read back
            return list(self.pool.run(specs, include_written=True))
        return list(self.pool.run(specs))

    def close(self) -> None:
        if not self.own_server:
            return  # the caller's pool and endpoint: the caller closes them
        try:
            self.pool.close()
        finally:
            self.server.close()


def rollout_fields(rows: Sequence[TraceRow], *, pad_id: int, fallback_prompt_ids: Sequence[list[int]] | None = None,
                   extra_rewards: Sequence[dict[str, float | None]] | None = None,
                   max_completion_length: int | None = None) -> dict[str, list[Any]]:
    """The ``rollout_func`` output for ``rows``: token fields, ``env_mask``, ``reward_<name>`` and ``trace_row``.

    An episode with no captured turn (it failed before the model spoke) gets one masked ``pad_id`` token so
    the batch stays aligned; its ``env_mask`` is all 0, so it trains nothing. Joined completions longer than
    ``max_completion_length`` (model and env tokens together) are cut to it, as the trainer's own generation
    would be; the cut tokens are not trained on.
    """
    out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": []}
    names = sorted({k for r in rows for k in r.rewards} | {k for e in extra_rewards or () for k in e})
    for name in names:
        out[f"reward_{name}"] = []
    out["trace_row"] = []
    for i, row in enumerate(rows):
        flat = flatten_turns(row.trace.turns)
        if not flat.completion_ids:
            prompt = flat.prompt_ids or (list(fallback_prompt_ids[i]) if fallback_prompt_ids else [pad_id])
            flat = FlatEpisode(prompt, [pad_id], [0.0], [0])
        if max_completion_length is not None and len(flat.completion_ids) > max_completion_length:
            cut = max_completion_length
            flat = FlatEpisode(flat.prompt_ids, flat.completion_ids[:cut], flat.logprobs[:cut], flat.env_mask[:cut])
        out["prompt_ids"].append(flat.prompt_ids)
        out["completion_ids"].append(flat.completion_ids)
        out["logprobs"].append(flat.logprobs)
        out["env_mask"].append(flat.env_mask)
        rewards = {**row.rewards, **(extra_rewards[i] if extra_rewards else {})}
        for name in names:
            out[f"reward_{name}"].append(rewards.get(name))
        out["trace_row"].append(row.model_dump_json())
    return out


class TrlRolloutFunc:
    """The callable handed to ``GRPOTrainer(rollout_func=...)``; see :func:`make_rollout_func`.

    Attributes:
        last_rows: the TraceRows of the latest call, in the trainer's batch order.
        last_allowed: per row of the latest call, (completion position, allowed token ids) of every token sampled
            under a decoding constraint, for :func:`~openenv_train.integrations.trl.grpo_trainer_class` (empty when
            the backend cannot tell, and with ``turn_rows``, whose rows carry their own).
        last_turns: per row of the latest call, (first, end, reward) of each model turn (empty without
            ``turn_rewards``), for the trainer's turn-level advantages.
        runner: the episode runner (built on the first call, from the trainer's model and tokenizer).
        overlap: the next batch's episodes play while the trainer trains on this one (see :func:`make_rollout_func`).
        turn_rows: the trainer trains each model turn as a row of its own (see :func:`make_rollout_func`).
        last_turn_rows: with ``turn_rows``, the latest call's model turns, one :class:`TurnRow` each.
        last_staleness: with ``overlap``, per row of the latest call, optimizer steps between the weights its
            episode began with and the weights it trains (0 or 1).
    """

    def __init__(self, env: str | PoolFactory, *, agent: AgentLoop | None, config: PoolConfig | None,
                 writer: TraceWriter | None, task_fn: Callable[[Any], dict[str, Any]],
                 rubric: Callable[[TraceRow], Any] | None, per_turn_tokens: int | None,
                 policy_server: Any = None, episode_prefix: str = "", policy_url: str | None = None,
                 local: LocalConfig | None = None, turn_rewards: TurnRewards | None = None,
                 agent_temperature: bool = False, overlap: bool = False, turn_rows: bool = False,
                 trained_turns: TrainedTurns | None = None, serve: Callable[[Any], Any] | None = None,
                 caller_sets: Sequence[str] = ()) -> None:
        self.caller_sets = tuple(caller_sets)
        self.turn_rewards, self.agent_temperature, self.overlap = turn_rewards, agent_temperature, overlap
        self.turn_rows, self.trained_turns, self.serve = turn_rows, trained_turns, serve
        self.last_turn_rows: list[TurnRow] = []
        self.env, self.agent, self.config, self.writer, self.local = env, agent, config, writer, local
        self.policy_server, self.episode_prefix, self.policy_url = policy_server, episode_prefix, policy_url
        self.tokenizer: Any = None
        self.task_fn, self.rubric, self.per_turn_tokens = task_fn, rubric, per_turn_tokens
        self.runner: Any = None
        self.last_rows: list[TraceRow] = []
        self.last_allowed: list[list[tuple[int, Any]]] = []
        self.last_turns: list[list[tuple[int, int, float | None]]] = []
        self.calls = 0
        self._last_step, self._step_calls = -1, 0
        self.last_staleness: list[int] = []
        self._next: list[Any] | None = None  # overlap: the trainer's inputs to play while it trains
        self._pending: tuple[list[Any], Future[list[TraceRow]]] | None = None  # overlap: (inputs, their rows)
        self._background: ThreadPoolExecutor | None = None
        self.__name__ = "openenv_rollout"

    def _build(self, trainer: Any) -> Any:
        from .._runner import LocalRunner

        tokenizer = getattr(trainer, "processing_class", None)
        tokenizer = self.tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a processor wraps its tokenizer
        sampling = trainer_sampling(trainer.args, self.per_turn_tokens)
        if isinstance(self.env, str):
            if self.policy_url:
                raise ValueError("policy_url needs a pool (a PoolFactory or a started pool), not an env name")
            config = self.config or PoolConfig(num_actors=1)
            max_tokens = config.max_tokens if config.max_tokens is not None else int(trainer.args.max_completion_length)
            import dataclasses

            config = dataclasses.replace(config, sampling={**sampling, **config.sampling}, max_tokens=max_tokens)
            return LocalRunner(self.env, trainer.model, tokenizer, agent=self.agent, config=config,
                               writer=self.writer, local=self.local)
        return _PoolRunner(self.env, trainer.model, tokenizer, sampling, server=self.policy_server,
                           policy_url=self.policy_url, local=self.local, agent_temperature=self.agent_temperature,
                           serve=self.serve, caller_sets=self.caller_sets)

    def specs(self, prompts: Sequence[Any], num_generations: int, step: int, tag: str = "") -> list[EpisodeSpec]:
        """One episode per prompt; each run of ``num_generations`` is a group with one seed (``tag`` marks the ids
        of a batch played out of the usual order)."""
        specs = []
        for i, prompt in enumerate(prompts):
            group = i // num_generations
            task = self.task_fn(prompt)
            seed = task.pop("seed", None)
            if seed is None:
                key = json.dumps(prompts[group * num_generations], sort_keys=True, default=str)
                seed = zlib.crc32(f"{step}:{group}:{key}".encode())
            # step and call within the step name the episode, so a run resumed at a step skips written rows
            group_id = f"{self.episode_prefix}s{step}-c{self._step_calls}{tag}-g{group}"
            specs.append(EpisodeSpec(f"{group_id}-{i % num_generations}", task, int(seed), group_id))
        return specs

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        if self.runner is None:
            self.runner = self._build(trainer)
            if self.overlap:
                self._check_overlap()
        step = int(trainer.state.global_step)
        self._step_calls = self._step_calls + 1 if step == self._last_step else 0
        self._last_step = step
        num_generations = int(getattr(trainer, "num_generations", None) or trainer.args.num_generations)
        if num_generations < 1 or len(prompts) % num_generations:
            raise ValueError(f"rollout_func got {len(prompts)} prompts, not a multiple of num_generations="
                             f"{num_generations}: make per_device_train_batch_size * gradient_accumulation_steps "
                             "(times the number of processes) a multiple of num_generations")
        if self.overlap:
            rows = self._overlapped(prompts, trainer, num_generations, step)
        else:
            self.runner.backend.version = step
            rows = self.runner.run(self.specs(prompts, num_generations, step))
        self.calls += 1
        self.last_rows = rows
        extra = None
        if self.rubric is not None:
            extra = [dict(self.rubric(r).components) for r in rows]
        limit = int(trainer.args.max_completion_length)
        allowed_tokens = getattr(self.runner.backend, "allowed_tokens", None)
        # with turn rows the trainer discards the joined layout, and turn_rows replays each turn's constraint itself
        self.last_allowed = ([constrained_positions(r, allowed_tokens, limit) for r in rows]
                             if allowed_tokens is not None and not self.turn_rows else [])
        self.last_turns = [turn_credit(r, self.turn_rewards(r), limit) for r in rows] if self.turn_rewards else []
        self.last_turn_rows = turn_rows(rows, allowed_tokens, limit, self.trained_turns) if self.turn_rows else []
        tokenizer = self.tokenizer
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        return rollout_fields(rows, pad_id=int(pad_id or 0), extra_rewards=extra,
                              fallback_prompt_ids=[_render(tokenizer, p) for p in prompts],
                              max_completion_length=limit)

    def next_inputs(self, inputs: list[Any]) -> list[Any]:
        """With ``overlap``: note ``inputs`` (the trainer's next batch) as the episodes to play while this step trains,
        and return the batch this step trains on instead: the one noted at the previous step (at the first step,
        ``inputs`` themselves, which are then played twice). :func:`~openenv_train.integrations.trl.
        grpo_trainer_class`'s trainer calls it before each generation, so its reward functions and logs see the
        prompts of the episodes they score."""
        current = self._pending[0] if self._pending is not None else None
        self._next = list(inputs)
        return current if current is not None else list(inputs)

    def _check_overlap(self) -> None:
        if getattr(getattr(self.runner.backend, "engine", None), "kind", None) != "process":
            raise ValueError("overlap needs the trainer's model served from an engine process (LocalBackend with "
                             "LocalConfig(engine='process'), a model on the CPU): a model decoding in the trainer's "
                             "process would be switched to eval mode and share its GIL while the trainer trains")

    def _overlapped(self, prompts: list[Any], trainer: Any, num_generations: int, step: int) -> list[TraceRow]:
        if self._next is None:
            raise ValueError("overlap=True needs grpo_trainer_class()'s trainer: it hands the rollout the next "
                             "batch's prompts (TrlRolloutFunc.next_inputs) before each generation")
        if self._pending is None:  # the first step (of a run or a resumed one): played now, under ids of its own
            self.runner.backend.version = step
            rows = self.runner.run(self.specs(prompts, num_generations, step, "-now"))
        else:
            played, future = self._pending
            if _prompts(played) != prompts:
                raise RuntimeError("overlap: the trainer asked for other prompts than the ones played for this step")
            rows = future.result()
        self._pending = None
        self.last_staleness = [max(0, step - int(r.policy.version)) if r.policy.version is not None else 0
                               for r in rows]
        if step + 1 < int(trainer.args.max_steps):  # no batch is played that no step would train on
            if self._background is None:
                self._background = ThreadPoolExecutor(1, thread_name_prefix="rollout-overlap")
            nxt, self._next = self._next, None
            # its ids name the step that will train on it (a run resumed there reads its written rows back); its
            # policy version is the weights it begins with
            specs = self.specs(_prompts(nxt), num_generations, step + 1)
            self._pending = (nxt, self._background.submit(self.runner.run, specs))
        return rows

    def weight_writes(self) -> Any:
        """A ``TrainerCallback`` for ``overlap``: holds the serving backend's ``weights_lock`` while the optimizer
        writes the weights (a batch decodes with one version of them) and sets the backend's version to the new
        step after each write."""
        from transformers import TrainerCallback

        rollout = self

        class _WeightWrites(TrainerCallback):  # type: ignore[misc]
            held: Any = None

            def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                lock = getattr(getattr(rollout.runner, "backend", None), "weights_lock", None)
                if lock is not None:
                    lock.acquire()
                    self.held = lock

            def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                if self.held is not None:
                    rollout.runner.backend.version = state.global_step + 1
                    self.held, held = None, self.held
                    held.release()

        return _WeightWrites()

    def close(self) -> None:
        """Stop the env server(s) and the policy endpoint (after the episodes still playing, if any)."""
        if self._pending is not None:
            self._pending[1].exception()  # its rows are written; nothing trains on them
            self._pending = None
        if self._background is not None:
            self._background.shutdown()
            self._background = None
        if self.runner is not None:
            self.runner.close()
            self.runner = None


def _prompts(inputs: Sequence[Any]) -> list[Any]:
    """The prompts TRL hands ``rollout_func`` for a batch of dataset rows."""
    return [x["prompt"] for x in inputs]


def _render(tokenizer: Any, prompt: Any) -> list[int]:
    if isinstance(prompt, str):
        return list(tokenizer(prompt, add_special_tokens=False)["input_ids"]) or [tokenizer.pad_token_id or 0]
    return list(tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True, return_dict=False))


def make_rollout_func(env: str | PoolFactory | Any, *, agent: AgentLoop | None = None, config: PoolConfig | None = None,
                      writer: TraceWriter | None = None, task_fn: Callable[[Any], dict[str, Any]] = default_task,
                      rubric: Callable[[TraceRow], Any] | None = None, per_turn_tokens: int | None = None,
                      policy_server: Any = None, episode_prefix: str = "",
                      policy_url: str | None = None, local: LocalConfig | None = None,
                      turn_rewards: TurnRewards | None = None, agent_temperature: bool = False,
                      overlap: bool = False, turn_rows: bool = False, trained_turns: TrainedTurns | None = None,
                      serve: Callable[[Any], Any] | None = None, caller_sets: Sequence[str] = ()) -> TrlRolloutFunc:
    """A ``rollout_func`` for ``GRPOTrainer`` that plays the batch's episodes with the trainer's live model.

    On the first call the trainer's ``model`` and tokenizer are served by a :class:`~openenv_train.policy.PolicyServer`
    in this process (the weights the trainer updates are the ones that answer; ``backend.version`` is set to
    the global step before each batch). Every model turn is captured; each episode becomes one prompt (the
    first turn's) and one completion (model turns and the env text between them, ``env_mask`` 0 on the
    latter). Rows go to ``writer`` and to ``.last_rows``.

    Args:
        env: catalog name, ``module:Class`` or URL: episodes run in this process, no Ray (one env server
            subprocess). Or a :data:`PoolFactory` building a Ray :class:`~openenv_train.pool.RolloutPool`. Or a
            started pool whose policy is ``policy_server``'s URL (its rows go to the pool's writer).
        agent: the agent loop (default :class:`~openenv_train.pool.TextAgent`).
        config: pool options (``max_turns``, ``sessions_per_actor``, ``sampling``...). ``sampling`` defaults to the
            trainer's ``temperature`` and ``max_tokens=per_turn_tokens or max_completion_length``; ``max_tokens``
            (model tokens per episode) to ``max_completion_length``.
        writer: a :class:`~openenv_train.trace.TraceWriter` for the rows.
        task_fn: dataset prompt -> reset options (default :func:`default_task`: a JSON object prompt). A
            ``seed`` key there is the group's seed; otherwise one is derived from the step and group.
        rubric: scores each row; its components are returned as ``reward_<name>`` keys (the env's reward is
            always ``reward_env``), next to ``trace_row`` (the row as JSON, what
            :func:`~openenv_train.rubrics.reward_function` reads).
        per_turn_tokens: completion tokens per model turn.
        policy_server: with a started pool as ``env``: the :class:`~openenv_train.policy.PolicyServer` the pool
            calls; its backend becomes the trainer's model with the trainer's sampling options.
        episode_prefix: prepended to every episode and group id (e.g. the phase of a recipe).
        policy_url: on a pool path, answer through this OpenAI-compatible server instead of the trainer's model
            in this process: a ``trl vllm-serve`` server that ``GRPOConfig(use_vllm=True, vllm_mode="server")``
            keeps in sync with the trainer's weights at every step.
        local: options of the :class:`~openenv_train.policy.LocalBackend` that serves the trainer's model (batching,
            prefix cache, decode threads); default ``LocalConfig()``.
        turn_rewards: a reward per model turn of a row (:data:`~openenv_train.integrations.trl.TurnRewards`), in
            ``.last_turns``, for the turn-level ``credit`` of :func:`~openenv_train.integrations.trl.grpo_trainer_class`.
        agent_temperature: on a pool path, a request that sets ``temperature`` keeps it (an agent that decodes some
            turns greedily and samples others at the trainer's temperature); otherwise the trainer's applies.
        turn_rows: :func:`~openenv_train.integrations.trl.grpo_trainer_class`'s trainer trains each model turn as a
            row of its own, under the prompt it was sampled from, with its episode's advantage; for agents whose
            prompts do not extend the turns before them (e.g. one that shows only the current state), whose
            episodes the joined layout cuts after the first turn.
        trained_turns: with ``turn_rows``, the turns of a row that are trained (default all of them; e.g. an agent's
            main line of calls, its side calls and subagents left out); the others train nothing.
        serve: on a pool path, wraps the backend the policy endpoint serves (e.g. a decoding constraint the host
            puts on every request); the trainer still reads masks and versions from the unwrapped one.
        caller_sets: on a pool path, sampling options a request may set for itself, the trainer's then being
            defaults: ``("max_tokens",)`` lets each env of a :class:`~openenv_train.pool.MixedPool` cap its own
            model calls (:class:`~openenv_train.pool.MixEnv`'s ``max_tokens``).

    On every path each episode samples with the trainer's ``temperature``, ``top_p`` and ``top_k``, and
    ``max_tokens=per_turn_tokens or max_completion_length`` per model turn.
    """
    if not isinstance(env, str) and not callable(env) and policy_server is None:
        raise ValueError("make_rollout_func: a started pool needs policy_server=, the PolicyServer whose URL is the "
                         "pool's policy (or pass a PoolFactory and let the rollout function start both)")
    return TrlRolloutFunc(env, agent=agent, config=config, writer=writer, task_fn=task_fn, rubric=rubric,
                          per_turn_tokens=per_turn_tokens, policy_server=policy_server, episode_prefix=episode_prefix,
                          policy_url=policy_url, local=local, turn_rewards=turn_rewards,
                          agent_temperature=agent_temperature, overlap=overlap, turn_rows=turn_rows,
                          trained_turns=trained_turns, serve=serve, caller_sets=caller_sets)
