"""Serving a model through a capturing endpoint on loopback, for runs that build their own policy."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..trace import CaptureStore
from ._endpoint import PolicyServer
from ._local import LocalBackend
from ._openai import v1_url
from ._upstream import UpstreamBackend

__all__ = ["policy_endpoint"]


@contextlib.asynccontextmanager
async def policy_endpoint(model: str, *, api_key: str | None = None,
                          model_name: str | None = None) -> AsyncIterator[tuple[str, CaptureStore]]:
    """Serve ``model`` through a capturing :class:`PolicyServer` on loopback.

    ``model`` is a local model folder (served by the transformers backend, with exact token ids) or an
    ``http(s)://`` URL of an OpenAI-compatible server (forwarded; ``/v1`` is added when missing), asked for
    ``model_name`` (default: the first model it lists). Yields ``(server URL, capture store)``; open a capture
    session per attempt and send its id as the API key.

    Raises:
        FileNotFoundError: ``model`` is neither a URL nor an existing folder.
    """
    backend: Any
    if model.startswith(("http://", "https://")):
        backend = UpstreamBackend(v1_url(model), api_key=api_key, model=model_name)
    elif Path(model).is_dir():
        backend = await asyncio.to_thread(lambda: LocalBackend(model, model_id=model_name))
    else:
        raise FileNotFoundError(f"--model {model}: not an http(s):// URL nor a model folder (config.json, weights, "
                                "tokenizer); build a tiny one with openenv_train.policy.build_tiny_model(path)")
    capture = CaptureStore()
    server = PolicyServer(backend, capture=capture, token="")
    async with server:
        yield server.url, capture
