"""Serving a model through a capturing endpoint on loopback, for runs that build their own policy."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..trace import CaptureStore
from ._endpoint import PolicyServer
from ._local import LocalBackend
from ._openai import v1_url
from ._types import PolicyBackend
from ._upstream import UpstreamBackend

__all__ = ["CapturedPolicy", "captured_policy", "policy_endpoint"]


@dataclass(frozen=True)
class CapturedPolicy:
    """A policy served on loopback by :func:`captured_policy`."""

    #: ``http://127.0.0.1:PORT/v1``: what an OpenAI client (or a rollout pool) takes as its base URL.
    base_url: str
    #: Where the endpoint records the calls made with an open capture session.
    capture: CaptureStore
    #: The endpoint itself (e.g. for :meth:`PolicyServer.replace_backend`).
    server: PolicyServer


@contextlib.contextmanager
def captured_policy(backend: PolicyBackend) -> Iterator[CapturedPolicy]:
    """Serve ``backend`` on loopback from a background thread, recording calls into a fresh :class:`CaptureStore`.

    The endpoint takes no token (loopback only); each episode's capture session id is its API key. The server
    stops when the block ends.

    Raises:
        ServerStartError: the endpoint could not bind a port.
    """
    capture = CaptureStore()
    with PolicyServer(backend, capture=capture, token="").run_in_thread() as server:
        yield CapturedPolicy(server.base_url, capture, server)


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
