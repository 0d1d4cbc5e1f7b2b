"""Per-token text of a completion: strings stored in the row, else a tokenizer found locally, else none.

Never downloads: a tokenizer is loaded only from a local folder or the Hugging Face cache (offline).
"""

from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["TokenTexts", "row_token_strings"]


def row_token_strings(turn: dict[str, Any], n: int) -> list[str] | None:
    """Token strings stored with the turn, when there is one per completion token.

    Looked for in ``metadata["completion_tokens"]`` and in the first choice's OpenAI ``logprobs.content``
    (``token`` of each entry; vLLM's ``token_id:<id>`` placeholders do not count).
    """
    metadata = turn.get("metadata") or {}
    tokens = metadata.get("completion_tokens")
    if not _strings(tokens, n):
        choices = (turn.get("response") or {}).get("choices") or [{}]
        content = ((choices[0] or {}).get("logprobs") or {}).get("content") or []
        tokens = [c.get("token") for c in content if isinstance(c, dict)]
        if not _strings(tokens, n) or all(str(t).startswith("token_id:") for t in tokens):
            return None
    return [str(t) for t in tokens or ()]


def _strings(tokens: Any, n: int) -> bool:
    return isinstance(tokens, list) and len(tokens) == n and n > 0 and all(isinstance(t, str) for t in tokens)


class TokenTexts:
    """Decodes token ids with tokenizers found on this machine, one load per model name (misses are cached)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokenizers: dict[str, Any] = {}

    def texts(self, turn: dict[str, Any], model: str | None) -> tuple[list[str] | None, str]:
        """``(texts, source)`` for the turn's completion tokens; source is ``row``, ``tokenizer`` or ``ids``."""
        ids = list(turn.get("completion_token_ids") or [])
        stored = row_token_strings(turn, len(ids))
        if stored is not None:
            return stored, "row"
        name = (turn.get("metadata") or {}).get("model") or model
        tokenizer = self.tokenizer(name) if ids and name else None
        if tokenizer is None:
            return None, "ids"
        try:
            return [tokenizer.decode([i]) for i in ids], "tokenizer"
        except Exception:  # an id outside the vocabulary: this is not the tokenizer of the row
            return None, "ids"

    def tokenizer(self, name: str) -> Any:
        """The tokenizer of ``name`` if it is a local folder or in the HF cache; None otherwise."""
        with self._lock:
            if name in self._tokenizers:
                return self._tokenizers[name]
            self._tokenizers[name] = tok = _load(name)
            return tok


def _load(name: str) -> Any:
    if not os.path.isdir(name):
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:
            return None
        try:
            cached = try_to_load_from_cache(name, "tokenizer_config.json")
        except Exception:  # not a valid repo id
            return None
        if not isinstance(cached, str):
            return None
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except Exception:
        return None
