"""The other direction: what verifiers' own built-in ``openenv`` taskset sends, played on our real servers.

Its ``OpenEnvEnv.run`` reads ``GET /schema``'s action schema and turns each plain-text reply into
``{required[0]: reply}`` when the schema has exactly one required field (else it refuses the reply). Its
client is OpenEnv's ``GenericEnvClient`` (the ``openenv`` package, not in this venv): the wire it speaks to our
servers is covered by tests/compat; here its own ``parse_action`` runs on our servers' schemas, and the actions
it builds are stepped on our servers.
"""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("verifiers.v1", reason="verifiers is not installed (pip install 'openenv-train[verifiers]')")

from verifiers.v1.tasksets.openenv.taskset import parse_action as their_parse_action  # noqa: E402

from openenv_train.client import GenericEnvClient  # noqa: E402
from tests.conftest import serve_process  # noqa: E402


async def _schema(base_url: str) -> dict:
    http = base_url.replace("ws://", "http://", 1)
    async with httpx.AsyncClient(timeout=30) as client:
        reply = await client.get(f"{http}/schema")
    reply.raise_for_status()
    return reply.json()["action"]  # type: ignore[no-any-return]


async def test_their_plain_text_reply_plays_wordle() -> None:
    async with serve_process("wordle") as (endpoint, _):
        schema = await _schema(endpoint.base_url)
        assert schema["required"] == ["message"]  # as OpenEnv's TextArenaAction
        action = their_parse_action("I'll open with [crane]", schema)
        assert action == {"message": "I'll open with [crane]"}
        async with GenericEnvClient(endpoint.base_url) as env:
            await env.reset(seed=0)
            result = await env.step(action)
            assert result.observation["guesses"] == ["crane"]
            assert result.reward is not None


async def test_their_json_reply_plays_counter() -> None:
    async with serve_process("counter") as (endpoint, _):
        schema = await _schema(endpoint.base_url)
        action = their_parse_action('```json\n{"delta": 2}\n```', schema)
        assert action == {"delta": 2}
        async with GenericEnvClient(endpoint.base_url) as env:
            await env.reset(seed=0)
            result = await env.step(action)
            assert result.observation["value"] == 2
