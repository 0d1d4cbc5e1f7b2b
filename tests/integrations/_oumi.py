"""Shared by the Oumi tests: whether they skip, and a Wordle agent whose every game scores above 0.

A random tiny model's free text is never a valid guess, so its Wordle reward is always 0 and nothing would show
that the env's reward reached the trainer. Here each reply is restricted (``guided_choice``) to one of ``WORDS``,
and each game allows one guess (``max_guesses: 1``): every secret shares letters with every allowed word, so each
game scores between 0.2 and 1 and the scores differ within a group.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

from openenv_train.pool import PoolConfig, message_action, render_observation

#: Without oumi the tests that need it skip, unless OPENENV_TRAIN_REQUIRE_OUMI=1 (CI's Oumi venv), where they fail.
OUMI_MISSING = importlib.util.find_spec("oumi") is None and os.environ.get("OPENENV_TRAIN_REQUIRE_OUMI") != "1"
WORDS = ["crane", "slate", "trace", "grape"]


def write_tasks(path: Path) -> Path:
    """A local JSON-lines dataset: one prompt per secret, each a JSON object of reset options."""
    path.write_text("".join(json.dumps({"prompt": json.dumps({"task": w, "max_guesses": 1})}) + "\n" for w in WORDS))
    return path


class ChoiceAgent:
    """Plays Wordle with each reply restricted to ``WORDS``."""

    async def __call__(self, ctx: Any) -> None:
        result = await ctx.reset()
        messages: list[dict[str, Any]] = []
        while not result.done:
            messages.append({"role": "user", "content": render_observation(result.observation)})
            reply = await ctx.chat(messages, extra={"guided_choice": WORDS})
            text = str(reply.message.get("content") or "")
            messages.append({"role": "assistant", "content": text})
            result = await ctx.step(message_action(text))


def registration_options(run_id: str) -> dict[str, Any]:
    """register_oumi's options shared by the in-process and the ``oumi train`` tests."""
    return {"agent": ChoiceAgent(), "config": PoolConfig(num_actors=1, max_turns=2, run_id=run_id),
            "per_turn_tokens": 8}
