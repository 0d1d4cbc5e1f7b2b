"""Key/value tensors of earlier turns, kept so the next turn of a conversation prefills only its new tokens.

Turn k+1 of an episode starts with the exact ids of turn k's prompt and completion (the continuation the
endpoint resolves), so the attention keys and values computed for them while turn k was generated are those the
next prefill would compute again, up to float rounding. An entry holds one sequence's ids and, per layer, its
keys and values; a lookup returns the longest entry whose ids start the prompt. Entries are evicted least recently
used first when the byte budget is exceeded, and all of them are dropped when the weights may have changed: a new
policy version (the trainer's step), a parameter's storage or in-place version counter changed (most optimizers,
``load_state_dict``), or a sample of every parameter's values changed (fused optimizers, e.g. TRL's default
``adamw_torch_fused``, write the weights without bumping the version counters).

No torch import at module level; tensors are whatever the decoder stores. Used from one thread (the batcher's).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["CachedPrefix", "PrefixCache", "weights_fingerprint"]


@dataclass(frozen=True)
class CachedPrefix:
    """One cached sequence: its ids and per layer ``(keys, values)``, each ``[kv_heads, len(ids), head_dim]``."""

    ids: tuple[int, ...]
    layers: tuple[tuple[Any, Any], ...]
    nbytes: int


def weights_fingerprint(model: Any, version: Any = None) -> tuple[Any, Any]:
    """What identifies the weights: ``version``, each parameter's storage and in-place version counter, and up to
    16 evenly spaced values of each parameter (a tensor, compared exactly)."""
    import torch

    params = [p.detach() for p in model.parameters()]
    key = (version, tuple((p.data_ptr(), p._version) for p in params))
    sample = torch.cat([p.reshape(-1)[:: max(1, p.numel() // 16)][:16].float() for p in params]) if params else None
    return key, sample


def _same(a: tuple[Any, Any] | None, b: tuple[Any, Any]) -> bool:
    import torch

    return a is not None and a[0] == b[0] and (a[1] is None) == (b[1] is None) and (
        a[1] is None or torch.equal(a[1], b[1]))


class PrefixCache:
    """LRU cache of prefixes' keys and values, bounded in bytes.

    Args:
        max_bytes: Budget for all entries' tensors; an entry larger than it is not kept.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.hits = 0
        """Lookups that found a prefix (for benchmarks and tests)."""
        self.reused_tokens = 0
        """Prompt tokens not prefilled again thanks to a hit."""
        self._entries: OrderedDict[tuple[int, ...], CachedPrefix] = OrderedDict()
        self._fingerprint: Any = None

    def __len__(self) -> int:
        return len(self._entries)

    def check_weights(self, fingerprint: tuple[Any, Any]) -> None:
        """Drop every entry if the weights (:func:`weights_fingerprint`) are not those the entries were computed
        with."""
        if not _same(self._fingerprint, fingerprint):
            self.clear()
            self._fingerprint = fingerprint

    def clear(self) -> None:
        """Drop every entry."""
        self._entries.clear()
        self.nbytes = 0

    def lookup(self, prompt: list[int]) -> CachedPrefix | None:
        """The longest entry whose ids start ``prompt`` and leave at least one token of it to prefill."""
        best: CachedPrefix | None = None
        for entry in self._entries.values():
            n = len(entry.ids)
            if n < len(prompt) and (best is None or n > len(best.ids)) and prompt[n - 1] == entry.ids[-1] \
                    and tuple(prompt[:n]) == entry.ids:
                best = entry
        if best is not None:
            self._entries.move_to_end(best.ids)
            self.hits += 1
            self.reused_tokens += len(best.ids)
        return best

    def store(self, ids: list[int], layers: list[tuple[Any, Any]]) -> None:
        """Keep ``layers`` for ``ids``. The prefix it extended stays: other sequences may share it (a GRPO group's
        games start alike) and come to it later; least recently used entries go first when memory runs out."""
        nbytes = sum(k.nelement() * k.element_size() + v.nelement() * v.element_size() for k, v in layers)
        if not ids or nbytes > self.max_bytes:
            return
        key = tuple(ids)
        old = self._entries.pop(key, None)
        if old is not None:
            self.nbytes -= old.nbytes
        self._entries[key] = CachedPrefix(key, tuple(layers), nbytes)
        self.nbytes += nbytes
        while self.nbytes > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self.nbytes -= evicted.nbytes
