"""Shared pieces of the security tests: a token, a byte-level policy backend, raw HTTP helpers."""

from __future__ import annotations

import secrets
from typing import Any

from openenv_train.policy import ChatChoice, ChatRequest, ChatResult

#: A token like the ones users make (``secrets.token_urlsafe``); random per run so a leak cannot match by luck.
TOKEN = secrets.token_urlsafe(24)


class ByteBackend:
    """A real PolicyBackend: answers ``"ok"`` and counts one token per UTF-8 byte of the messages' text.

    It lets the endpoint's auth and token caps be tested with exact, known token counts and no model.
    """

    model_id = "bytes"

    def __init__(self, completion: str = "ok") -> None:
        self.completion = completion
        self.calls = 0

    async def chat(self, request: ChatRequest) -> ChatResult:
        self.calls += 1
        prompt = list("".join(str(m.get("content") or "") for m in request.messages).encode())
        completion = list(self.completion.encode())
        choice = ChatChoice(message={"role": "assistant", "content": self.completion}, finish_reason="stop",
                            token_ids=completion, logprobs=[0.0] * len(completion))
        return ChatResult(model=self.model_id, choices=[choice], prompt_token_ids=prompt, exact=True)

    async def aclose(self) -> None:
        return None


def chat_body(content: str = "hi", **params: Any) -> dict[str, Any]:
    """A one-message chat request body."""
    return {"model": "bytes", "messages": [{"role": "user", "content": content}], **params}
