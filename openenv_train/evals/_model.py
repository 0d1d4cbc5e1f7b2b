"""The ``openenv`` Inspect model API: our policy backends as ``--model openenv/<tiny|path|url>``.

- ``openenv/tiny``: the tiny offline model (built once into ``$OPENENV_TRAIN_TINY_DIR`` or a temp folder);
- ``openenv/<folder>``: a local checkpoint served by :class:`~openenv_train.policy.LocalBackend`;
- ``openenv/http(s)://host/v1``: any OpenAI-compatible server through
  :class:`~openenv_train.policy.UpstreamBackend` (``-M model=<name>`` picks its model).

Answers carry usage (token counts), so Inspect never downloads a tokenizer to count them.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput
from inspect_ai.tool import ToolChoice, ToolInfo

from ._convert import openai_messages, openai_tools, output_from_openai

__all__ = ["OpenEnvModelAPI", "tiny_model_dir"]


def tiny_model_dir() -> Path:
    """The tiny model's folder, built on first use (atomically, so parallel processes agree)."""
    from ..policy import build_tiny_model

    path = Path(os.environ.get("OPENENV_TRAIN_TINY_DIR") or Path(tempfile.gettempdir()) / "openenv-train-tiny")
    if (path / "config.json").exists():
        return path
    staging = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    build_tiny_model(staging, seed=0)
    try:
        staging.rename(path)
    except OSError:  # another process built it first
        shutil.rmtree(staging, ignore_errors=True)
    return path


class OpenEnvModelAPI(ModelAPI):
    """Inspect model API over an openenv_train policy backend (local model, tiny model, or upstream URL)."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = GenerateConfig(), **model_args: Any) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        from ..policy import LocalBackend, UpstreamBackend, v1_url

        target = base_url or model_name
        self.backend: Any
        if target.startswith(("http://", "https://")):
            self.backend = UpstreamBackend(v1_url(target), api_key=api_key,
                                           model=model_args.get("model"))
        else:
            path = tiny_model_dir() if target == "tiny" else Path(target)
            if not (path / "config.json").exists():
                raise ValueError(f"openenv/{model_name}: not 'tiny', a model folder (config.json) or an http(s) URL")
            self.backend = LocalBackend(path, model_id=model_name)

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        from ..policy import parse_chat_request

        body: dict[str, Any] = {"model": self.model_name, "messages": openai_messages(input)}
        if tools:
            body["tools"] = openai_tools(tools)
        for key in ("temperature", "top_p", "max_tokens", "seed"):
            value = getattr(config, key)
            if value is not None:
                body[key] = value
        body.setdefault("max_tokens", 64)
        result = await self.backend.chat(parse_chat_request(body))
        choice = result.choices[0]
        n_in = len(result.prompt_token_ids or [])
        n_out = len(choice.token_ids or []) or len(str(choice.message.get("content") or "").split())
        return output_from_openai(result.model, choice.message, choice.finish_reason, input_tokens=n_in,
                                  output_tokens=n_out)

    async def aclose(self) -> None:
        await asyncio.shield(self.backend.aclose())
