"""One decoding step for a whole batch at once: temperature, top-k, top-p and per-row seeds as tensors.

Every row draws its random numbers from its own ``torch.Generator`` (seeded from its request) once per batch,
one uniform per step, and samples by inverting the CDF of its filtered distribution: a seeded row samples the
same tokens whatever else shares its batch, and no step runs Python per row.

Logprobs are ``log_softmax(logits / temperature)`` of the token chosen (raw logits at temperature 0), before
top-p/top-k filtering and after a constraint's mask (see :mod:`._generation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._types import SamplingParams

if TYPE_CHECKING:
    import torch

__all__ = ["BatchSampler"]


@dataclass
class _Top:
    """Top logprobs of one step for the rows that asked: ids and values, ``[rows, k]``."""

    ids: torch.Tensor
    values: torch.Tensor


class BatchSampler:
    """The sampling parameters of a batch's rows, as tensors, and their random draws for ``steps`` steps."""

    def __init__(self, params: list[SamplingParams], seeds: list[int], steps: int, device: torch.device) -> None:
        import torch

        self.greedy = torch.tensor([p.temperature == 0 for p in params], device=device)
        self.any_sampled = not bool(self.greedy.all())
        self.temps = torch.tensor([p.temperature or 1.0 for p in params], device=device)[:, None]
        top_k = [p.top_k for p in params]
        top_p = [p.top_p for p in params]
        self.filtered = any(k > 0 for k in top_k) or any(p < 1.0 for p in top_p)
        self.top_k = torch.tensor(top_k, device=device)[:, None]
        self.top_p = torch.tensor(top_p, device=device, dtype=torch.float64)[:, None]
        self.want_top = max(p.top_logprobs for p in params)
        draws = [torch.rand(steps, generator=torch.Generator().manual_seed(s), dtype=torch.float64)
                 if p.temperature != 0 else torch.zeros(steps, dtype=torch.float64) for p, s in zip(params, seeds, strict=True)]
        self.uniforms = torch.stack(draws).to(device)

    def choose(self, logits: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor, _Top | None]:
        """The next token of every row, its logprob, and the top logprobs when any row asked for them."""
        import torch

        logp = torch.log_softmax(logits / self.temps, dim=-1)
        tokens = logits.argmax(dim=-1)
        if self.any_sampled:
            sampled = self._sample(logp, self.uniforms[:, step])
            tokens = torch.where(self.greedy, tokens, sampled)
        chosen = logp.gather(1, tokens[:, None])[:, 0]
        top = None
        if self.want_top:
            values, ids = torch.topk(logp, min(self.want_top, logp.shape[-1]), dim=-1)
            top = _Top(ids, values)
        return tokens, chosen, top

    def _sample(self, logp: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
        import torch

        if not self.filtered:
            return _invert(logp.double().exp(), uniform)
        ordered, order = torch.sort(logp, dim=-1, descending=True)
        probs = ordered.double().exp()
        rank = torch.arange(probs.shape[-1], device=probs.device)[None, :]
        probs = torch.where((self.top_k > 0) & (rank >= self.top_k), 0.0, probs)
        probs = probs / probs.sum(dim=-1, keepdim=True)
        drop = (torch.cumsum(probs, dim=-1) - probs) >= self.top_p
        drop[:, 0] = False
        probs = torch.where(drop, 0.0, probs)
        return order.gather(1, _invert(probs, uniform)[:, None])[:, 0]


def _invert(probs: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF sampling per row: the first index whose cumulative mass exceeds ``uniform`` x total (tokens of
    zero mass are never chosen: the CDF does not rise at them)."""
    import torch

    cdf = torch.cumsum(probs, dim=-1)
    target = (uniform * cdf[:, -1])[:, None]
    last = probs.shape[-1] - 1 - (probs > 0).flip(-1).to(torch.uint8).argmax(dim=-1)  # a rounding guard
    return torch.minimum(torch.searchsorted(cdf, target, right=True)[:, 0], last)
