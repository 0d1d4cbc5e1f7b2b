"""The data a policy backend takes and returns, and the backend Protocol itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "ChatChoice", "ChatRequest", "ChatResult", "ChoiceDelta", "Constraint", "Continuation", "FinishReason",
    "PolicyBackend", "SamplingParams", "StreamEvent", "StreamStart", "StreamingBackend",
]

#: Why a completion ended; ``"abort"`` (vLLM's name) marks a streamed reply cut short by its client leaving.
FinishReason = Literal["stop", "length", "tool_calls", "abort"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one chat completion (OpenAI names; ``top_k`` and ``stop_token_ids`` are vLLM extras)."""

    temperature: float = 1.0
    """0 means greedy decoding."""
    top_p: float = 1.0
    """Nucleus sampling: keep the smallest set of tokens whose probability reaches ``top_p``."""
    top_k: int = 0
    """Keep only the ``top_k`` most likely tokens; 0 keeps all."""
    max_tokens: int | None = None
    """Most completion tokens; None lets the backend choose (its default, at most the context left)."""
    stop: tuple[str, ...] = ()
    """Strings that end the completion; the returned text stops before them."""
    stop_token_ids: tuple[int, ...] = ()
    """Token ids that end the completion, besides the model's end-of-turn tokens."""
    seed: int | None = None
    """Seed of the sampler; the same seed, prompt and parameters give the same completion."""
    n: int = 1
    """Completions for this prompt."""
    logprobs: bool = False
    """Return OpenAI ``logprobs`` per choice (token ids and logprobs are returned either way)."""
    top_logprobs: int = 0
    """Alternatives listed per token in ``logprobs`` (0-20)."""
    use_beam_search: bool = False
    """Beam search instead of sampling (vLLM's extra): ``n`` is the width, the ``n`` best beams are the choices,
    best first; deterministic (temperature and seed play no part)."""
    length_penalty: float = 1.0
    """With ``use_beam_search``: a beam's score is its summed logprob over its length to this power (vLLM's)."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (lists for tuples; the beam options only with ``use_beam_search``)."""
        out = asdict(self)
        out["stop"], out["stop_token_ids"] = list(self.stop), list(self.stop_token_ids)
        if not self.use_beam_search:
            del out["use_beam_search"], out["length_penalty"]
        return out


@dataclass(frozen=True)
class Continuation:
    """Token ids of an earlier turn of the same capture session that the new request's messages extend.

    A backend that renders prompts itself may reuse these ids (prompt + completion, exactly as the model saw
    and sampled them) instead of re-tokenising the earlier turns' text, and append the rendering of the
    messages after them, as TRL's multi-turn loop does.
    """

    token_ids: tuple[int, ...]
    """The earlier turn's prompt ids followed by its completion ids."""
    messages: int
    """How many leading messages of the new request these ids stand for (through the earlier reply)."""
    node_id: str
    """The earlier turn's ``node_id``."""


@dataclass(frozen=True)
class Constraint:
    """A restriction on the completion's text (constrained decoding), parsed from the request.

    Exactly one of ``choices`` (the text is one of these strings) and ``regex`` (the text fullmatches it) is set.
    """

    choices: tuple[str, ...] | None = None
    """The completion is exactly one of these strings (vLLM's ``guided_choice``)."""
    regex: str | None = None
    """The completion fullmatches this pattern (vLLM's ``guided_regex``)."""
    field: str = "guided_choice"
    """The request field it came from, named in errors (``guided_choice``, ``structured_outputs.regex``, ...)."""
    order: str = "given"
    """``given``: a choice is written as it is; ``any`` (``guided_choice_order``, ours): its characters in any order,
    each followed by its 1-based position (``r2e3s4h5f1`` for ``fresh``; :func:`~openenv_train.policy.spell_in_order`)."""

    def describe(self) -> dict[str, Any]:
        """A short JSON summary for turn metadata (the list itself is in the recorded request)."""
        if self.choices is not None:
            return {"kind": "choice", "field": self.field, "choices": len(self.choices),
                    **({"order": self.order} if self.order != "given" else {})}
        return {"kind": "regex", "field": self.field, "regex": self.regex}


@dataclass
class ChatRequest:
    """A parsed ``/v1/chat/completions`` request."""

    messages: list[dict[str, Any]]
    """Normalised messages (content as text; tool-call arguments as given)."""
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    model: str | None = None
    """The model name the caller asked for (recorded; any name is served by the backend's model)."""
    return_tokens_as_token_ids: bool = False
    """vLLM extra: write ``logprobs`` tokens as ``token_id:<id>``."""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra variables for the chat template (vLLM extra)."""
    body: dict[str, Any] = field(default_factory=dict)
    """The request body as received (an upstream backend forwards it)."""
    continuation: Continuation | None = None
    constraint: Constraint | None = None
    """Constrained decoding asked for (``guided_choice``/``guided_regex``/``structured_outputs``), or None."""
    stream: bool = False
    """Answer with server-sent events (``chat.completion.chunk``) instead of one body."""
    include_usage: bool = False
    """With ``stream``: end with a chunk carrying ``usage`` (``stream_options.include_usage``)."""


@dataclass
class ChatChoice:
    """One completion: the assistant message and, when the backend has them, its exact tokens."""

    message: dict[str, Any]
    """OpenAI assistant message: ``role``, ``content`` and, when the model called tools, ``tool_calls``."""
    finish_reason: FinishReason
    token_ids: list[int] | None = None
    """Completion token ids as sampled (end-of-turn token included when the model produced one)."""
    logprobs: list[float] | None = None
    """One logprob per completion token (see the backend for which distribution)."""
    openai_logprobs: dict[str, Any] | None = None
    """OpenAI ``logprobs`` object (``{"content": [...]}``), when asked for."""
    stop_sequence: str | None = None
    """The stop string (``stop``) that ended the completion, when one did and the backend can tell (Anthropic's
    ``stop_reason: "stop_sequence"``)."""
    beam_score: float | None = None
    """Beam search: this beam's score (summed logprob over length to ``length_penalty``); None when sampled."""


@dataclass
class ChatResult:
    """A backend's answer to one :class:`ChatRequest`."""

    model: str
    choices: list[ChatChoice]
    prompt_token_ids: list[int] | None = None
    """The tokens the model was fed; None when the backend cannot tell."""
    exact: bool = False
    """True when prompt ids, completion ids and logprobs are the ones the model used ("train" data)."""
    sampling_used: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    """Backend details recorded in the turn metadata (timings, batch size, continuation, ...)."""
    reported_usage: dict[str, Any] | None = None
    """``usage`` as an upstream server reported it."""

    @property
    def usage(self) -> dict[str, Any]:
        """OpenAI ``usage``: as reported upstream, else counted from the token ids."""
        if self.reported_usage is not None:
            return self.reported_usage
        prompt = len(self.prompt_token_ids or ())
        completion = sum(len(c.token_ids or ()) for c in self.choices)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass(frozen=True)
class StreamStart:
    """The first event of a streamed answer: what is known before the first token."""

    model: str
    prompt_token_ids: list[int] | None = None
    """The tokens the model is fed; None when the backend cannot tell (yet)."""
    exact: bool = False
    """Whether the deltas' token ids and logprobs are the ones the model sampled."""


@dataclass(frozen=True)
class ChoiceDelta:
    """A piece of one choice's reply, in order: text, tool-call deltas and the tokens behind them.

    The deltas of a choice add up to its final message (``content`` concatenated; ``tool_calls`` merged by
    ``index`` as OpenAI's clients do), token ids and logprobs.
    """

    index: int
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    """OpenAI tool-call deltas (``index``, then ``id``/``type``/``function.name`` once, ``function.arguments``)."""
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    openai_logprobs: list[dict[str, Any]] | None = None
    """OpenAI ``logprobs.content`` entries of these tokens, when the request asked for logprobs."""


#: What :meth:`StreamingBackend.stream` yields: one :class:`StreamStart`, the deltas, then the whole
#: :class:`ChatResult` (the same one ``chat`` would have returned).
StreamEvent = StreamStart | ChoiceDelta | ChatResult


@runtime_checkable
class PolicyBackend(Protocol):
    """What :class:`~openenv_train.policy.PolicyServer` serves: anything that answers chat requests."""

    @property
    def model_id(self) -> str:
        """The name ``/v1/models`` lists and answers carry."""
        ...

    async def chat(self, request: ChatRequest) -> ChatResult:
        """Answer one request.

        Raises:
            PolicyError: a subclass naming the HTTP status (400 for a request the backend cannot serve).
        """
        ...

    async def aclose(self) -> None:
        """Release threads, connections and tasks."""
        ...


@runtime_checkable
class StreamingBackend(Protocol):
    """A backend that can also answer piece by piece (a backend without it is streamed as one piece)."""

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Answer one request as events: a :class:`StreamStart`, :class:`ChoiceDelta` pieces, the :class:`ChatResult`.

        Closing the iterator early (its client left) stops the generation.

        Raises:
            PolicyError: as :meth:`PolicyBackend.chat`.
        """
        ...
