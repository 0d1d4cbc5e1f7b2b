"""make_art_rollout: ART's ``rollout(model, scenario) -> art.Trajectory`` over any env of ours.

Each call plays one episode with one of our agent loops (text replies parsed into actions, or tool calls),
asking the ART model through an OpenAI client on its ``inference_base_url`` / ``inference_api_key``, under
``model.get_inference_name()`` (``model_client=True`` uses ``model.openai_client()`` itself). When the inference
endpoint is our :class:`~openenv_train.policy.PolicyServer` with a :class:`~openenv_train.trace.CaptureStore`,
every call names the episode's capture session (``X-Capture-Session``), so the turns, with token ids and
logprobs, land in a TraceRow (written to ``writer`` if given) and the trajectory is built from that row: ART
then trains on exactly the sampled tokens. Without a store the OpenAI ``Choice`` objects are used as returned.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core import OpenEnvTrainError
from ...pool import (
    AgentLoop,
    ChatPolicy,
    EpisodeSpec,
    ModelReply,
    PolicyCallError,
    PoolConfig,
)
from ...trace import CaptureStore, TraceRow, TraceWriter
from .._one_loop import OneLoopEpisodes
from ._convert import to_art_trajectory, to_art_trajectory_fields
from ._import import import_art

__all__ = ["ArtRollout", "ArtRolloutError", "make_art_rollout"]


class ArtRolloutError(OpenEnvTrainError, RuntimeError):
    """An episode failed (env, agent or model); ``row`` is its failed TraceRow. ART's gather records it."""

    def __init__(self, row: TraceRow) -> None:
        self.row = row
        error = row.error
        super().__init__(f"episode {row.episode_id} on {row.env.name} failed: "
                         f"{error.type if error else 'error'}: {error.message if error else 'no detail'}")


@dataclass
class _Episode:
    model: Any
    captured: bool
    calls: list[tuple[list[dict[str, Any]], Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] | None = None


class _ArtPolicy(ChatPolicy):
    """The agent loop's policy: each episode's calls go to that episode's ART model client."""

    def __init__(self, sampling: Mapping[str, Any], logprobs: bool, model_client: bool, timeout_s: float) -> None:
        super().__init__("http://art-model.invalid/v1", sampling=dict(sampling), timeout_s=timeout_s)
        self.logprobs, self.model_client = logprobs, model_client
        self.episodes: dict[str, _Episode] = {}
        self._clients: dict[tuple[str, str], Any] = {}

    def _openai_for(self, model: Any) -> Any:
        """The model's own ``openai_client()``, or an ``AsyncOpenAI`` on its inference URL and key.

        ART 0.5.18's ``openai_client()`` hands an ``httpx.Timeout`` to openai>=3's httpx2-based client, which
        fails on the first request, so by default the client is built here from the same fields.
        """
        if self.model_client:
            return model.openai_client()
        if not model.inference_base_url:
            raise PolicyCallError(f"ART model {model.name!r} has no inference_base_url; register it with a backend "
                                  "or set inference_base_url (e.g. our PolicyServer's base_url)")
        key = (str(model.inference_base_url), str(model.inference_api_key or "EMPTY"))
        if key not in self._clients:
            import openai

            self._clients[key] = openai.AsyncOpenAI(base_url=key[0], api_key=key[1], timeout=self.timeout_s)
        return self._clients[key]

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                   session: str | None = None, extra: dict[str, Any] | None = None) -> ModelReply:
        import openai

        episode = self.episodes[session or ""]
        kwargs: dict[str, Any] = dict(self.sampling)
        if extra:
            kwargs["extra_body"] = dict(extra)
        if tools:
            kwargs["tools"] = episode.tools = tools
        if self.logprobs:
            kwargs["logprobs"] = True
        headers = {"X-Capture-Session": session} if episode.captured and session else None
        try:
            completion = await self._openai_for(episode.model).chat.completions.create(
                model=episode.model.get_inference_name(), messages=messages, extra_headers=headers, **kwargs)
        except openai.OpenAIError as exc:
            raise PolicyCallError(f"ART model {episode.model.name!r} at {episode.model.inference_base_url} failed: "
                                  f"{type(exc).__name__}: {exc}") from None
        if not completion.choices:
            raise PolicyCallError(f"ART model {episode.model.name!r} answered without choices")
        choice = completion.choices[0]
        episode.calls.append((list(messages), choice))
        usage = completion.usage
        message = choice.message.model_dump(mode="json", exclude_none=True)
        return ModelReply(message, choice.finish_reason, int(usage.completion_tokens) if usage else 0,
                          int(usage.prompt_tokens or 0) if usage else 0)


def _spec(scenario: EpisodeSpec | Mapping[str, Any] | None) -> EpisodeSpec:
    if isinstance(scenario, EpisodeSpec):
        return scenario
    task = dict(scenario or {})
    episode_id = str(task.pop("episode_id", None) or uuid.uuid4().hex[:12])
    group_id, seed = task.pop("group_id", None), task.pop("seed", None)
    return EpisodeSpec(episode_id, task, seed, group_id)


def _messages_and_choices(calls: list[tuple[list[dict[str, Any]], Any]]) -> list[Any]:
    """The last call's messages and reply, with earlier replies (where they still stand) as their Choices."""
    if not calls:
        return []
    final: list[Any] = [*calls[-1][0], calls[-1][1]]
    for messages, choice in calls[:-1]:
        at = len(messages)
        if at < len(final) - 1 and isinstance(final[at], dict) and final[at].get("role") == "assistant":
            final[at] = choice
    return final


class ArtRollout(OneLoopEpisodes):
    """``await rollout(model, scenario)`` plays one episode and returns an ``art.Trajectory``.

    Args:
        env: catalog name or ``module:Class`` (one server subprocess is started on first use), or a URL.
        agent: the agent loop (default :class:`~openenv_train.pool.TextAgent`; ``ToolAgent`` for tools).
        capture: the CaptureStore of the PolicyServer serving the model; None uses the model's replies as is.
        config: pool options used here: ``max_turns``, ``max_tokens``, ``episode_timeout_s``,
            ``sessions_per_actor`` (episodes at once), ``client``, ``run_id``, ``env_vars``, ``server_args``.
        writer: every episode's TraceRow is written to it.
        sampling: extra chat-completion arguments (``temperature``, ``max_tokens``, ...).
        logprobs: ask for logprobs (ART needs them to train on the returned Choices).
        model_client: call through ``model.openai_client()`` (broken in ART 0.5.18 with openai>=3, see
            ``_ArtPolicy._openai_for``) instead of a client built from the model's inference URL and key.
        trainable: build trainable Choices from captured turns (see :func:`to_art_trajectory`).

    A scenario is an :class:`~openenv_train.pool.EpisodeSpec` or a mapping of reset options (``task``,
    ``seed``; ``episode_id`` and ``group_id`` are taken out). ``rows`` holds the rows of finished episodes.
    One instance serves one event loop; ``await aclose()`` stops its env server.

    Raises (on call):
        ArtRolloutError: the episode failed; ART's ``gather_trajectory_groups`` records it as an exception.
    """

    def __init__(self, env: str, *, agent: AgentLoop | None = None, capture: CaptureStore | None = None,
                 config: PoolConfig | None = None, writer: TraceWriter | None = None,
                 sampling: Mapping[str, Any] | None = None, logprobs: bool = True, trainable: bool = True,
                 model_client: bool = False) -> None:
        super().__init__(env, agent=agent, config=config, capture=capture, writer=writer)
        self.trainable = trainable
        self.policy = _ArtPolicy(sampling or self.config.sampling, logprobs, model_client, self.config.model_timeout_s)
        self.rows: list[TraceRow] = []

    async def __call__(self, model: Any, scenario: EpisodeSpec | Mapping[str, Any] | None = None) -> Any:
        art = import_art()
        episode = _Episode(model, captured=self.capture is not None)
        row, _ = await self._play(_spec(scenario), "art", episode, model.get_inference_name())
        if not row.ok:
            raise ArtRolloutError(row)
        if self.capture is not None:
            return to_art_trajectory(row, trainable=self.trainable)
        fields = {**to_art_trajectory_fields(row), "tools": episode.tools,
                  "messages_and_choices": _messages_and_choices(episode.calls)}
        return art.Trajectory(**fields)

def make_art_rollout(env: str, **options: Any) -> ArtRollout:
    """An :class:`ArtRollout` for ``env``: ``rollout = make_art_rollout("wordle", capture=store)``, then
    ``await art.gather_trajectory_groups(art.TrajectoryGroup(rollout(model, s) for _ in range(n)) for s in ...)``.
    """
    return ArtRollout(env, **options)
