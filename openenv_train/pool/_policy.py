"""The actor's side of the policy: an OpenAI-compatible chat client that names the episode's capture session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ChatPolicy", "ModelReply", "PolicyCallError", "PolicyUnavailable"]

from ..policy import ChatClient, ChatTransportError, api_key_for, v1_url
from ._errors import PoolError


class PolicyCallError(PoolError):
    """The policy endpoint failed or answered something that is not a chat completion."""


class PolicyUnavailable(PolicyCallError):
    """The policy endpoint answered 503: it could not serve the call now (e.g. its engine process died and was
    replaced) and says a retry may succeed, so the pool plays the episode again."""


@dataclass
class ModelReply:
    """One assistant message and the tokens it cost."""

    message: dict[str, Any]
    finish_reason: str | None
    completion_tokens: int
    prompt_tokens: int = 0
    """The prompt's tokens as the endpoint counted them (0 when it did not say): with ``completion_tokens``, how
    long the conversation is, e.g. for a loop that stops at a token budget as TRL's tool loop does."""


class ChatPolicy:
    """Calls ``POST {base_url}/chat/completions`` with ``Authorization: Bearer <capture session id>``.

    Args:
        base_url: the endpoint's OpenAI base URL (``http://host:port/v1``; ``/v1`` is added when missing).
        model: model name to ask for; None asks the server's (``"default"``).
        sampling: extra body fields (``temperature``, ``max_tokens``, ...).
        timeout_s: limit on one call.
        token: the endpoint's token, for a :class:`~openenv_train.policy.PolicyServer` started with one: each
            call then sends ``<token>:<capture session id>`` (:func:`~openenv_train.policy.api_key_for`).
            None sends the bare session id.
    """

    def __init__(self, base_url: str, *, model: str | None = None, sampling: dict[str, Any] | None = None,
                 timeout_s: float = 300.0, token: str | None = None) -> None:
        self.base_url = v1_url(base_url)
        self.model = model
        self.sampling = dict(sampling or {})
        self.timeout_s = timeout_s
        self.token = token
        self._client = ChatClient(self.base_url, timeout_s=timeout_s, max_connections=256)

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                   session: str | None = None, extra: dict[str, Any] | None = None) -> ModelReply:
        """One chat completion (first choice); ``extra`` adds body fields (e.g. ``guided_choice``).

        Raises:
            PolicyCallError: the call failed, timed out or was refused.
            PolicyUnavailable: the endpoint answered 503 (worth a retry).
        """
        body: dict[str, Any] = {"model": self.model or "default", "messages": messages, **self.sampling, **(extra or {})}
        if tools:
            body["tools"] = tools
        key = api_key_for(session, self.token) if session or self.token else None
        try:
            reply = await self._client.chat(body, api_key=key)
        except ChatTransportError as exc:
            raise PolicyCallError(f"policy call to {self.base_url} failed: {exc.kind}: {exc.detail}") from None
        if reply.status == 503:
            raise PolicyUnavailable(f"policy endpoint {self.base_url} answered 503: {reply.text[:300]}")
        if reply.status != 200:
            raise PolicyCallError(f"policy endpoint {self.base_url} answered {reply.status}: {reply.text[:300]}")
        data = reply.data
        try:
            choice = data["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise PolicyCallError(f"policy endpoint answered without choices: {str(data or reply.text)[:300]}") from None
        usage = data.get("usage") or {}
        tokens = usage.get("completion_tokens") or len(choice.get("token_ids") or [])
        return ModelReply(dict(choice.get("message") or {}), choice.get("finish_reason"), int(tokens),
                          int(usage.get("prompt_tokens") or 0))

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.aclose()
