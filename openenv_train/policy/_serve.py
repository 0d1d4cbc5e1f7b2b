"""Serving a model through a capturing endpoint on loopback, for runs that build their own policy."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..trace import CaptureStore
from ._backends.local import LocalBackend
from ._backends.upstream import UpstreamBackend
from ._endpoint.server import PolicyServer
from ._types import PolicyBackend
from ._wire.openai_chat import v1_url

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


class captured_policy:  # noqa: N801 (used as a function: ``with captured_policy(backend) as served``)
    """Serve ``backend`` on loopback, recording calls into a fresh :class:`CaptureStore`; a sync or async block.

    ``with captured_policy(backend) as served`` serves from a background thread (for sync code);
    ``async with captured_policy(backend) as served`` serves on the running event loop. Either yields a
    :class:`CapturedPolicy` (``base_url``, ``capture``, ``server``). The endpoint takes no token (loopback
    only); each episode's capture session id is its API key. The server stops when the block ends.

    Raises:
        ServerStartError: the endpoint could not bind a port.
    """

    def __init__(self, backend: PolicyBackend) -> None:
        self.capture = CaptureStore()
        self.server = PolicyServer(backend, capture=self.capture, token="")

    def _served(self) -> CapturedPolicy:
        return CapturedPolicy(self.server.base_url, self.capture, self.server)

    def __enter__(self) -> CapturedPolicy:
        self.server.run_in_thread()
        return self._served()

    def __exit__(self, *exc: object) -> None:
        self.server.close()

    async def __aenter__(self) -> CapturedPolicy:
        await self.server.start()
        return self._served()

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop()


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
    async with captured_policy(backend) as served:
        yield served.server.url, served.capture
