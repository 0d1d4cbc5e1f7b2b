"""Fixtures: the tiny model (random, and taught one tool-calling conversation) and servers over it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from openenv_train.policy import (
    EndpointConfig,
    LocalBackend,
    LocalConfig,
    PolicyServer,
    build_tiny_model,
    teach_tiny_model,
)
from openenv_train.trace import CaptureStore

ADD_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]},
    },
}
#: The conversation the taught model reproduces under greedy decoding.
TAUGHT: list[dict[str, Any]] = [
    {"role": "user", "content": "What is 2 plus 3?"},
    {"role": "assistant", "content": "",
     "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3}}}]},
    {"role": "tool", "name": "add", "content": "5"},
    {"role": "assistant", "content": "The answer is 5."},
]


def _require_torch() -> None:
    for module in ("torch", "transformers", "tokenizers"):
        pytest.importorskip(module, reason=f"{module} is not installed (pip install torch transformers tokenizers)")


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _require_torch()
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), seed=0)


@pytest.fixture(scope="session")
def taught_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _require_torch()
    path = build_tiny_model(tmp_path_factory.mktemp("taught"), seed=0)
    return teach_tiny_model(path, [TAUGHT], tools=[ADD_TOOL])


def _load(path: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


@pytest.fixture(scope="session")
def tiny(tiny_path: Path) -> tuple[Any, Any]:
    """(model, tokenizer) of the random tiny model."""
    return _load(tiny_path)


@pytest.fixture(scope="session")
def taught(taught_path: Path) -> tuple[Any, Any]:
    """(model, tokenizer) of the tiny model taught :data:`TAUGHT`."""
    return _load(taught_path)


@contextlib.asynccontextmanager
async def serve(model_tok: tuple[Any, Any], *, capture: CaptureStore | None = None, api_key: str | None = None,
                config: EndpointConfig | None = None, local: LocalConfig | None = None) -> AsyncIterator[PolicyServer]:
    """A PolicyServer over a LocalBackend of ``model_tok``, in the test's event loop."""
    model, tokenizer = model_tok
    backend = LocalBackend(model, tokenizer, config=local, model_id="tiny")
    async with PolicyServer(backend, capture=capture, api_key=api_key, config=config) as server:
        yield server


def chat_body(content: str = "hi", **params: Any) -> dict[str, Any]:
    """A one-message chat request body."""
    return {"model": "tiny", "messages": [{"role": "user", "content": content}], **params}
