"""The actor's side of the policy: an OpenAI-compatible chat client that names the episode's capture session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ChatPolicy", "ModelReply", "PolicyCallError"]

from ..policy import v1_url
from ._errors import PoolError


class PolicyCallError(PoolError):
    """The policy endpoint failed or answered something that is not a chat completion."""


@dataclass
class ModelReply:
    """One assistant message and the completion tokens it cost."""

    message: dict[str, Any]
    finish_reason: str | None
    completion_tokens: int


class ChatPolicy:
    """Calls ``POST {base_url}/chat/completions`` with ``Authorization: Bearer <capture session id>``.

    Args:
        base_url: the endpoint's OpenAI base URL (``http://host:port/v1``; ``/v1`` is added when missing).
        model: model name to ask for; None asks the server's (``"default"``).
        sampling: extra body fields (``temperature``, ``max_tokens``, ...).
        timeout_s: limit on one call.
    """

    def __init__(self, base_url: str, *, model: str | None = None, sampling: dict[str, Any] | None = None,
                 timeout_s: float = 300.0) -> None:
        self.base_url = v1_url(base_url)
        self.model = model
        self.sampling = dict(sampling or {})
        self.timeout_s = timeout_s
        self._client: Any = None

    async def chat(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                   session: str | None = None, extra: dict[str, Any] | None = None) -> ModelReply:
        """One chat completion (first choice); ``extra`` adds body fields (e.g. ``guided_choice``).

        Raises:
            PolicyCallError: the call failed, timed out or was refused.
        """
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout_s, limits=httpx.Limits(max_connections=256))
        body: dict[str, Any] = {"model": self.model or "default", "messages": messages, **self.sampling, **(extra or {})}
        if tools:
            body["tools"] = tools
        headers = {"authorization": f"Bearer {session}"} if session else {}
        try:
            reply = await self._client.post(f"{self.base_url}/chat/completions", json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise PolicyCallError(f"policy call to {self.base_url} failed: {type(exc).__name__}: {exc}") from None
        if reply.status_code != 200:
            raise PolicyCallError(f"policy endpoint {self.base_url} answered {reply.status_code}: {reply.text[:300]}")
        data = reply.json()
        try:
            choice = data["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise PolicyCallError(f"policy endpoint answered without choices: {str(data)[:300]}") from None
        usage = data.get("usage") or {}
        tokens = usage.get("completion_tokens") or len(choice.get("token_ids") or [])
        return ModelReply(dict(choice.get("message") or {}), choice.get("finish_reason"), int(tokens))

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
