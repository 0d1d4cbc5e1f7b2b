"""Speed work must not change what is captured: seeded episodes give the same turns as before it, token for token.

``data/captured_turns.json`` was written by :func:`play` from the code before the capture-path speed-ups
(issue 18). Regenerate it only for a deliberate change of what is captured::

    python -m tests.policy.test_capture_golden
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from openenv_train.policy import LocalConfig
from openenv_train.trace import CaptureStore
from tests.policy.conftest import ADD_TOOL, serve

GOLDEN = Path(__file__).parent / "data" / "captured_turns.json"
SESSIONS, TURNS = 3, 3
#: The fields of a captured turn that a speed change must keep (timings and request ids differ per run).
KEPT = ("prompt_token_ids", "completion_token_ids", "per_token_logps", "loss_mask", "request", "response")
META = ("turn", "rollout_type", "continued_from", "sampling_used", "sampling_requested", "n", "choice_index", "usage")


async def play(model_tok: tuple[Any, Any], local: LocalConfig | None = None,
               seen: list[Any] | None = None) -> list[list[dict[str, Any]]]:
    """Seeded sampled episodes, one after another (a batch of one row: the same forward passes every run), with
    a user message after each reply; the captured turns' kept fields. ``seen`` gets the backend."""
    import httpx

    capture = CaptureStore()
    async with serve(model_tok, capture=capture, local=local) as server, httpx.AsyncClient(timeout=120) as client:
        if seen is not None:
            seen.append(server.backend)
        async def episode(s: int) -> None:
            session = f"golden-{s}"
            capture.open_session(session)
            messages: list[dict[str, Any]] = [{"role": "user", "content": f"Game {s}: what is {s} plus 3?"}]
            for t in range(TURNS):
                body = {"model": "tiny", "messages": messages, "tools": [ADD_TOOL], "temperature": 1.0,
                        "seed": 100 * s + t, "max_tokens": 10, "logprobs": True}
                reply = await client.post(f"{server.base_url}/chat/completions", json=body,
                                          headers={"authorization": f"Bearer {server.api_key_for(session)}"})
                assert reply.status_code == 200, reply.text
                messages = [*messages, reply.json()["choices"][0]["message"],
                            {"role": "user", "content": f"Board after guess {t}: G Y X X G"}]

        for s in range(SESSIONS):
            await episode(s)
        traces = [capture.get(f"golden-{s}").turns for s in range(SESSIONS)]
    return [[{**{k: getattr(turn, k) for k in KEPT},
              "metadata": {k: turn.metadata.get(k) for k in META},
              "continued": turn.metadata.get("continued_from") is not None} for turn in turns] for turns in traces]


def _comparable(episodes: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Request/response ids are random per run: every episode's node ids become their positions."""
    text = json.dumps(episodes, sort_keys=True)
    for e, turns in enumerate(episodes):
        for t, turn in enumerate(turns):
            node = turn["metadata"]["continued_from"]
            if node:
                text = text.replace(node, f"node-{e}-{t - 1}")
    return json.loads(text)  # type: ignore[no-any-return]


@pytest.mark.timeout(900)  # seconds on a quiet machine; a 2-core box shared by many jobs needs minutes
def test_seeded_episodes_capture_the_same_turns_as_before(tiny: tuple[Any, Any]) -> None:
    golden = json.loads(GOLDEN.read_text())
    now = _comparable(asyncio.run(play(tiny)))
    assert len(now) == len(golden) == SESSIONS
    for e, (new, old) in enumerate(zip(now, golden, strict=True)):
        assert len(new) == len(old) == TURNS, f"episode {e}"
        for t, (a, b) in enumerate(zip(new, old, strict=True)):
            for key in ("prompt_token_ids", "completion_token_ids", "loss_mask", "request", "response", "metadata",
                        "continued"):
                assert a[key] == b[key], f"episode {e} turn {t}: {key} differs"
            # the same forward passes; a rewritten decode loop, or another CPU's float32 kernels (the file was
            # written on another machine; on an AVX-512 one they differ by up to 1.5e-6 relative), change the last bits only
            assert a["per_token_logps"] == pytest.approx(b["per_token_logps"], abs=1e-5, rel=1e-5), \
                f"episode {e} turn {t}: logprobs differ"
    assert all(turn["continued"] for episode in now for turn in episode[1:]), "later turns reuse the earlier ids"


if __name__ == "__main__":
    import tempfile

    from openenv_train.policy import build_tiny_model
    from tests.policy.conftest import _load

    with tempfile.TemporaryDirectory() as tmp:
        episodes = _comparable(asyncio.run(play(_load(build_tiny_model(Path(tmp), seed=0)))))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(episodes, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}: {sum(map(len, episodes))} turns")
