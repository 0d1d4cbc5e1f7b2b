"""Backends that wrap a policy rather than a model: a scripted expert served like a model, and fixed sampling.

- :class:`ScriptedBackend` answers each request with ``reply(messages)``; with a tokenizer it reports the
  prompt and completion token ids a model with that chat template would have seen and produced, so expert
  episodes captured through it are SFT data in exactly the format the model is later asked in. When the request
  offers ``tools``, a reply's ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` blocks become the answer's
  ``tool_calls``, as :class:`~openenv_train.policy.LocalBackend` parses a model's text.
- :class:`FixedSampling` serves another backend with sampling options the host chooses (greedy evaluation,
  a trainer's temperature), whatever the caller sent, except the options it lets the caller set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from .._errors import InvalidRequest
from .._stream_events import stream_chat
from .._types import ChatChoice, ChatRequest, ChatResult, PolicyBackend, StreamEvent
from .._wire.constraint_fields import CONSTRAINT_FIELDS
from .._wire.messages import reply_message

__all__ = ["FixedSampling", "ScriptedBackend"]


class ScriptedBackend:
    """A scripted policy behind the chat-completions API.

    Args:
        reply: ``reply(messages) -> text``: the assistant's answer to the conversation so far (with ``tools`` in the
            request, ``<tool_call>`` blocks in it are tool calls).
        tokenizer: a tokenizer with a chat template; when given, answers carry token ids (logprob 0.0 per
            token: the script is deterministic) so captured turns hold the exact training tokens.
        model_id: the name answers carry.
    """

    def __init__(self, reply: Callable[[list[dict[str, Any]]], str], tokenizer: Any = None, *,
                 model_id: str = "scripted") -> None:
        self.reply, self.tokenizer, self._model_id = reply, tokenizer, model_id
        self.version: int | None = None

    @property
    def model_id(self) -> str:
        """The name answers carry."""
        return self._model_id

    async def chat(self, request: ChatRequest) -> ChatResult:
        """Answer with ``reply(messages)`` (``n`` identical choices; ``tool_calls`` when it calls offered tools).

        Raises:
            InvalidRequest: the request asks for constrained decoding, which a script cannot honour.
        """
        if request.constraint is not None:
            raise InvalidRequest(
                f"'{request.constraint.field}' asks for constrained decoding, which the scripted backend cannot "
                "enforce (its replies come from a script, not a model); drop the constraint for scripted policies",
                param=request.constraint.field.partition(".")[0])
        text = self.reply(request.messages)
        prompt_ids: list[int] | None = None
        completion: list[int] | None = None
        if self.tokenizer is not None:
            prompt_ids = list(self.tokenizer.apply_chat_template(request.messages, tools=request.tools,
                                                                 add_generation_prompt=True, tokenize=True,
                                                                 return_dict=False))
            full = self.tokenizer.apply_chat_template([*request.messages, {"role": "assistant", "content": text}],
                                                      tools=request.tools, tokenize=True, return_dict=False)
            # The completion is what the template adds after the generation prompt, through the end-of-turn
            # token; trailing newlines the template writes between turns are not sampled by a model.
            completion = list(full[len(prompt_ids):])
            end = self.tokenizer.convert_tokens_to_ids(self.tokenizer.eos_token) if self.tokenizer.eos_token else None
            if end in completion:
                completion = completion[:completion.index(end) + 1]
        # The same rule as the local backend: offered tools (and not tool_choice "none") parse the text's calls.
        parse = bool(request.tools) and request.tool_choice != "none"
        choices = []
        for _ in range(request.sampling.n):
            message = reply_message(text, parse_tools=parse)
            choices.append(ChatChoice(message, "tool_calls" if "tool_calls" in message else "stop", completion,
                                      [0.0] * len(completion) if completion is not None else None))
        return ChatResult(self.model_id, choices, prompt_ids, exact=prompt_ids is not None,
                          info={"backend": "scripted", "policy_version": self.version})

    async def aclose(self) -> None:
        """Nothing to release."""


class FixedSampling:
    """Serve ``backend`` with ``overrides`` replacing the caller's sampling options; ``constrained=False`` also drops
    the caller's decoding constraint (to see what the model writes on its own). Options named in ``caller_may_set``
    are defaults only: a request that sets one keeps its value (an agent that decodes some turns greedily).

    >>> FixedSampling(ScriptedBackend(lambda m: "hi"), temperature=0.0).overrides
    {'temperature': 0.0}
    """

    def __init__(self, backend: PolicyBackend, *, constrained: bool = True, caller_may_set: Sequence[str] = (),
                 **overrides: Any) -> None:
        from .._types import SamplingParams

        known = {f.name for f in dataclasses.fields(SamplingParams)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown sampling option(s) {', '.join(unknown)}; options: {', '.join(sorted(known))}")
        self.backend, self.overrides, self.constrained = backend, overrides, constrained
        self.caller_may_set = frozenset(caller_may_set)

    @property
    def model_id(self) -> str:
        """The wrapped backend's name."""
        return self.backend.model_id

    async def chat(self, request: ChatRequest) -> ChatResult:
        """The wrapped backend's answer with the fixed sampling options."""
        return await self.backend.chat(self._fixed(request))

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """The wrapped backend's streamed answer with the fixed sampling options (whole, if it does not stream)."""
        return stream_chat(self.backend, self._fixed(request))

    def _fixed(self, request: ChatRequest) -> ChatRequest:
        fixed = {k: v for k, v in self.overrides.items() if k not in self.caller_may_set or k not in request.body}
        body = {**request.body, **{k: list(v) if isinstance(v, tuple) else v for k, v in fixed.items()}}
        if "max_tokens" in fixed:
            body.pop("max_completion_tokens", None)  # an upstream backend forwards the body: no conflicting cap
        constraint = request.constraint
        if not self.constrained:
            constraint = None
            for name in CONSTRAINT_FIELDS:
                body.pop(name, None)
        return dataclasses.replace(request, sampling=dataclasses.replace(request.sampling, **fixed), body=body,
                                   constraint=constraint)

    async def aclose(self) -> None:
        """Close the wrapped backend."""
        await self.backend.aclose()
