"""Miles (PyPI ``miles-rl``): any env of ours as a Miles custom agent function and reward function; torchforge.

Miles' agentic rollout (``--custom-generate-function-path miles.rollout.generate_hub.agentic_tool_call.generate``)
calls a user's agent function once per sample and records, in its session server, every token the agent's model
calls produce; ``--custom-rm-path`` names the reward function. Put both in a module of yours::

    # my_miles_env.py
    from openenv_train.integrations.miles import make_miles_agent_function, reward_func  # noqa: F401

    run = make_miles_agent_function("wordle")    # a catalog env, module:Class, env folder or server URL

then ``--custom-agent-function-path my_miles_env.run --custom-rm-path my_miles_env.reward_func`` (plus Miles' own
``--use-session-server``). ``await run(base_url, prompt, request_kwargs, metadata)`` plays one episode: the env
is reset with ``metadata["reset"]`` (a mapping of reset options, e.g. ``{"task": "crane"}``) and
``metadata["seed"]``, every model call goes to ``{base_url}/v1/chat/completions`` with Miles' ``request_kwargs``
(its sampling parameters), and the returned dict (merged by Miles into the sample's metadata) carries the env's
reward and turns as ``openenv_reward``, ``openenv_turns``, ``openenv_done``, ``openenv_ok``, ... The dataset's
``prompt`` is not sent: the env's reset observation is the conversation's first user message, as in every agent
loop of ours. ``reward_func(args, samples)`` (or ``(args, sample)``) returns those rewards.

A full Miles run needs SGLang inference engines on CUDA GPUs (and Megatron or FSDP for training); nothing of that
runs on a CPU. What runs anywhere is the contract: ``run()`` against any OpenAI-compatible endpoint (our
:class:`~openenv_train.policy.PolicyServer`, whose capture turns each episode into a TraceRow, and
:func:`to_miles_sample` into Miles' own ``Sample`` with the exact sampled tokens), and ``reward_func`` called by
Miles' own ``rm_hub``. Measured (miles-rl 0.0.2, CPU, Python 3.11): ``pip install miles-rl`` installs (it pulls
torch with CUDA libraries through ``torchft-nightly``); ``miles.utils.types.Sample`` and ``miles.rollout.rm_hub``
import; ``agentic_tool_call`` needs ``IPython`` and ``openai`` as well (undeclared by its bundled sglang).

torchforge (PyPI ``torchforge``) is not a dependency: it pins torch 2.9 and vLLM, and its package-index entry is a
placeholder. Its GRPO loop drives envs from a rollout coroutine; the recipe with our parts is:

1. serve the env (``openenv-train serve wordle --port 8001``) or let the pool start servers;
2. point the pool's policy at the generator's OpenAI-compatible URL (torchforge's vLLM service exposes one), or
   at our ``PolicyServer`` over the live model: ``pool = RolloutPool("wordle", policy=URL, config=PoolConfig(...))``;
3. in the rollout coroutine, ``rows = await pool.run(make_groups(tasks, num_generations=G))``; each row's
   ``reward`` is the episode's return and ``flatten_turns(row.trace.turns)`` the token ids, logprobs and loss
   mask torchforge's ``Episode`` takes (``prompt_ids``/``completion_ids``/``env_mask``);
4. compute group advantages from the rewards and hand the episodes to its trainer; bump the policy version
   (``LocalBackend.version``) after each weight sync so rows record which weights answered.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import OpenEnvTrainError
from ..pool import AgentLoop, ChatPolicy, EpisodeSpec, ModelReply, PoolConfig
from ..trace import CaptureStore, TraceRow, TraceWriter
from ._flatten import flatten_turns
from ._one_loop import OneLoopEpisodes

__all__ = ["INSTALL", "MilesAgent", "MilesError", "MilesNotInstalled", "import_miles_sample", "make_miles_agent_function",
           "reward_func", "to_miles_sample"]

INSTALL = "pip install miles-rl  (a full Miles run also needs SGLang on CUDA GPUs)"
REWARD_KEY = "openenv_reward"


class MilesError(OpenEnvTrainError, ValueError):
    """A Miles sample or setting this integration cannot use; the message names the fix."""


class MilesNotInstalled(OpenEnvTrainError, ImportError):
    """``miles`` (PyPI ``miles-rl``) is not installed; the message gives the install line."""


def import_miles_sample() -> Any:
    """Miles' ``Sample`` class (``miles.utils.types.Sample``).

    Raises:
        MilesNotInstalled: miles-rl is not installed (the message gives the install line).
    """
    try:
        from miles.utils.types import Sample
    except ImportError as exc:
        raise MilesNotInstalled(f"this needs Miles: {INSTALL} ({type(exc).__name__}: {exc})") from exc
    return Sample


@dataclass
class _Episode:
    policy: ChatPolicy
    captured: bool


class _MilesPolicy(ChatPolicy):
    """The agent loop's policy: each episode's calls go to the ``base_url`` Miles gave that episode."""

    def __init__(self, model: str | None, timeout_s: float) -> None:
        super().__init__("http://miles-session.invalid/v1", model=model, timeout_s=timeout_s)
        self.episodes: dict[str, _Episode] = {}

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                   session: str | None = None, extra: dict[str, Any] | None = None) -> ModelReply:
        episode = self.episodes[session or ""]
        return await episode.policy.chat(messages, tools=tools, session=session if episode.captured else None,
                                         extra=extra)


def _spec(metadata: Mapping[str, Any]) -> EpisodeSpec:
    reset = metadata.get("reset") or {}
    if not isinstance(reset, Mapping):
        raise MilesError(f"metadata['reset'] must be a mapping of the env's reset options (e.g. {{'task': 'crane'}}), "
                         f"got {type(reset).__name__}; fix the dataset's metadata column")
    episode_id = str(metadata.get("episode_id") or uuid.uuid4().hex[:12])
    group_id = metadata.get("group_id")
    return EpisodeSpec(episode_id, dict(reset), metadata.get("seed"), str(group_id) if group_id is not None else None)


def _result(row: TraceRow, env: str, turns: int) -> dict[str, Any]:
    """What ``run()`` returns: Miles merges it into every sample's metadata."""
    return {REWARD_KEY: row.reward, "openenv_rewards": dict(row.rewards), "openenv_turns": turns,
            "openenv_steps": len(row.steps),
            "openenv_done": row.done, "openenv_truncated": row.truncated, "openenv_ok": row.ok,
            "openenv_error": f"{row.error.type}: {row.error.message}" if row.error else None,
            "openenv_env": env, "openenv_episode_id": row.episode_id, "openenv_trace_id": row.trace_id}


class MilesAgent(OneLoopEpisodes):
    """Miles' custom agent function over any env of ours: ``await agent(base_url, prompt, request_kwargs, metadata)``.

    Args:
        env: catalog name, ``module:Class`` or env folder (one server subprocess is started on first use), or a URL.
        agent: the agent loop (default :class:`~openenv_train.pool.TextAgent`; ``ToolAgent`` for MCP tool envs).
        config: pool options used here: ``max_turns``, ``max_tokens``, ``episode_timeout_s``, ``sessions_per_actor``
            (episodes at once), ``model_timeout_s``, ``client``, ``run_id``, ``env_vars``, ``server_args``.
        capture: the CaptureStore of our PolicyServer when it is the endpoint (each call then names the episode's
            capture session): the episode's turns, token ids and logprobs land in its TraceRow.
        writer: every episode's TraceRow is written to it.
        model: the model name sent (default ``"default"``).
        keep_rows: how many recent rows :attr:`rows` keeps.

    One instance serves one event loop (Miles runs its rollouts on one); ``await aclose()`` stops its env server.

    Raises:
        EnvLoadError: ``env`` is not a catalog env, ``module:Class``, env folder or URL (at construction).
    """

    loop_error = MilesError

    def __init__(self, env: str, *, agent: AgentLoop | None = None, config: PoolConfig | None = None,
                 capture: CaptureStore | None = None, writer: TraceWriter | None = None, model: str | None = None,
                 keep_rows: int = 256) -> None:
        from ..pool import is_url

        if not is_url(env):
            from ..envs import load_env_target

            load_env_target(env)  # an unknown env fails here, with close matches, not in Miles' rollout
        super().__init__(env, agent=agent, config=config, capture=capture, writer=writer)
        self.policy = _MilesPolicy(model or self.config.model, self.config.model_timeout_s)
        self.rows: collections.deque[TraceRow] = collections.deque(maxlen=keep_rows)

    async def __call__(self, base_url: str, prompt: Any = None, request_kwargs: Mapping[str, Any] | None = None,
                       metadata: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        """Play one episode through ``{base_url}/v1``; the env's reward, turns and outcome, for the sample's metadata.

        A failed episode (env, agent or model) is not raised: its result has ``openenv_ok=False`` and the error.

        Raises:
            MilesError: ``metadata['reset']`` is not a mapping, or the agent is used from another event loop.
        """
        spec = _spec(metadata or {})
        sampling = {k: v for k, v in dict(request_kwargs or {}).items() if k not in ("model", "messages")}
        episode = _Episode(ChatPolicy(base_url, model=self.policy.model, sampling=sampling,
                                      timeout_s=self.policy.timeout_s), captured=self.capture is not None)
        try:
            row, outcome = await self._play(spec, "miles", episode, self.policy.model)
        finally:
            await episode.policy.aclose()
        return _result(row, self.env, int(outcome.get("turns") or 0))

def make_miles_agent_function(env: str, **options: Any) -> MilesAgent:
    """Miles' ``--custom-agent-function-path`` target for ``env`` (see :class:`MilesAgent` for ``options``).

    Example::

        run = make_miles_agent_function("wordle", config=PoolConfig(max_turns=6))

    Raises:
        EnvLoadError: ``env`` is not a catalog env, ``module:Class``, env folder or URL.
    """
    return MilesAgent(env, **options)


def _reward(sample: Any, failure_reward: float) -> float:
    metadata = getattr(sample, "metadata", None)
    if not isinstance(metadata, Mapping) or REWARD_KEY not in metadata:
        raise MilesError(f"the sample's metadata has no {REWARD_KEY!r}: its rollout did not run the agent function of "
                         "make_miles_agent_function (set --custom-agent-function-path to it, with "
                         "agentic_tool_call.generate as the generate function)")
    value = metadata[REWARD_KEY]
    return float(value) if value is not None and metadata.get("openenv_ok", True) else failure_reward


async def reward_func(args: Any, samples: Any, failure_reward: float = 0.0, **kwargs: Any) -> float | list[float]:
    """Miles' ``--custom-rm-path`` target: the env's reward of each sample (``openenv_reward`` in its metadata).

    Miles calls it with one sample (``async_rm``) or a list (``batched_async_rm``, group reward models) and gets a
    float or a list of floats back. An episode that failed, or ended without a reward, scores ``failure_reward``.

    Raises:
        MilesError: a sample's metadata has no ``openenv_reward`` (its rollout did not use our agent function).
    """
    if isinstance(samples, Sequence) and not isinstance(samples, (str, bytes)):
        return [_reward(s, failure_reward) for s in samples]
    return _reward(samples, failure_reward)


def to_miles_sample(row: TraceRow, *, prompt: Any = "", tokenizer: Any = None, failure_reward: float = 0.0) -> Any:
    """Miles' own ``Sample`` of a captured episode: the exact sampled tokens, loss mask, logprobs and the reward.

    ``tokens`` is the first prompt then the completion (model turns with the env's tokens between them, loss mask
    0 there), as Miles' multi-turn merge builds it; ``response`` is the completion decoded by ``tokenizer`` when
    given, else the model's replies joined. For rows of a :class:`MilesAgent` with ``capture`` (our PolicyServer).

    Raises:
        MilesNotInstalled: miles-rl is not installed.
        MilesError: the row has no captured token ids (it was not captured by our PolicyServer).
    """
    sample_cls = import_miles_sample()
    flat = flatten_turns(row.trace.turns)
    if not flat.completion_ids:
        raise MilesError(f"row {row.trace_id} has no captured token ids; play it through our PolicyServer with a "
                         "CaptureStore (MilesAgent(capture=...)) to build Miles samples from it")
    if tokenizer is not None:
        response = tokenizer.decode(flat.completion_ids)
    else:
        turns = row.trace.turns[: flat.turns_used]
        response = "\n".join(str(((t.response.get("choices") or [{}])[0].get("message") or {}).get("content") or "")
                             for t in turns)
    status = sample_cls.Status
    kind = status.FAILED if not row.ok else status.TRUNCATED if row.truncated else status.COMPLETED
    return sample_cls(prompt=prompt, tokens=flat.prompt_ids + flat.completion_ids, response=response,
                      response_length=len(flat.completion_ids), loss_mask=list(flat.env_mask),
                      rollout_log_probs=list(flat.logprobs), status=kind,
                      reward=float(row.reward) if row.ok and row.reward is not None else failure_reward,
                      metadata=_result(row, row.env.name, len(row.trace.turns)))
