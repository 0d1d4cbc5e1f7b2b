"""The actor's chat client reports what a reply cost: completion and prompt tokens as the endpoint counted them."""

from __future__ import annotations

import asyncio

from openenv_train.policy import PolicyServer, ScriptedBackend, build_tiny_tokenizer
from openenv_train.pool import ChatPolicy
from openenv_train.trace import CaptureStore


def test_a_reply_carries_its_prompt_and_completion_tokens() -> None:
    tokenizer = build_tiny_tokenizer()
    capture = CaptureStore()

    async def main() -> None:
        async with PolicyServer(ScriptedBackend(lambda m: "[crane]", tokenizer=tokenizer), capture=capture,
                                token="") as server:
            capture.open_session("s")
            policy = ChatPolicy(server.base_url)
            try:
                reply = await policy.chat([{"role": "user", "content": "Play Wordle."}], session="s")
            finally:
                await policy.aclose()
        turn = capture.get("s").turns[0]
        assert reply.prompt_tokens == len(turn.prompt_token_ids) > 0
        assert reply.completion_tokens == len(turn.completion_token_ids) > 0

    asyncio.run(main())
