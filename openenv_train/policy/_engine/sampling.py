"""One decoding step for a whole batch at once: temperature, top-k, top-p and per-row seeds as tensors.

A seeded row samples exactly the tokens that ``torch.multinomial(softmax(filtered), 1, generator=g)`` would draw
with its own ``torch.Generator`` ``g`` (seeded from its request, on the model's device), one draw per step: the
seed -> token mapping of the per-row loop this replaces, bit for bit, so a seeded request samples the same tokens
whatever else shares its batch and whichever version of the loop runs it. For one sample ``torch.multinomial``
is an exponential race: ``argmax(p / q)`` with ``q = empty_like(p).exponential_(1, generator=g)``; this module
computes the same ``p`` and ``q`` and takes the same argmax for all sampled rows with one tensor expression.

The ``q`` draws are the only per-row work (a vocabulary's worth of draws per row and step: a quarter of a small
model's decode on CPU): on CPU a row's draws for several steps come from one ``exponential_`` call (its values
equal those of one call per step: the CPU kernel draws element by element from the generator, which
``tests/policy/test_sampling.py`` checks), into one buffer for all rows, and the next chunk of steps is drawn in
a helper thread while the model decodes this one (torch releases the GIL while it draws; a row's generator is
only ever used by one thread at a time, in order, so its values do not change). On other devices, one call per
row and step, as before.

Logprobs are ``log_softmax(logits / temperature)`` of the token chosen (raw logits at temperature 0), before
top-p/top-k filtering and after a constraint's mask (see :mod:`.generation`). A temperature below
:data:`GREEDY_BELOW` decodes as temperature 0 does, as vLLM treats it: dividing float32 logits by it overflows.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._types import SamplingParams

if TYPE_CHECKING:
    import torch

__all__ = ["GREEDY_BELOW", "BatchSampler"]

#: Temperatures under this decode greedily (vLLM's ``_SAMPLING_EPS``); their logprobs are the raw logits'.
GREEDY_BELOW = 1e-5

#: Most exponential draws in one chunk per row on CPU (floats), and the first chunk's length in steps (it doubles).
_DRAW_BUDGET = 1 << 16
_FIRST_CHUNK = 4
#: The fewest draws (floats) a chunk is drawn ahead in a thread for: a smaller one costs less than the hand-off.
_AHEAD_FLOATS = 1 << 16


@dataclass
class _Top:
    """Top logprobs of one step for the rows that asked: ids and values, ``[rows, k]``."""

    ids: torch.Tensor
    values: torch.Tensor


class _Chunk:
    """Draws of steps ``start`` to ``start + count`` for the rows ``lanes``: ``[rows, count, vocab]``."""

    def __init__(self, generators: list[torch.Generator], lanes: list[int], start: int, count: int,
                 size: int) -> None:
        import torch

        self.start, self.end, self.size = start, start + count, size
        self.buffer = torch.empty((len(generators), count, size), dtype=torch.float32)
        for lane in lanes:  # a lane is contiguous: its values equal ``count`` calls of one step each
            self.buffer[lane].exponential_(1, generator=generators[lane])


class _Draws:
    """The sampled rows' generators and their exponential draws: ``at(step)`` is each row's ``[vocab]`` vector
    of that step. Every row draws at every step from 0 until it ends, so draws are consumed in order and the rows
    still going refill together: on CPU one ``[rows, steps, vocab]`` chunk at a time, a step's draws one index op,
    the next chunk drawn ahead in :data:`_AHEAD`'s thread for the rows going when this one began (the rows that
    end meanwhile waste their draws, as a refill for them did before)."""

    def __init__(self, seeds: list[int], device: torch.device, steps: int, vocab: int | None = None) -> None:
        import torch

        self.seeds = seeds
        self.generators = [torch.Generator(device=device).manual_seed(seed) for seed in seeds]
        self.device, self.steps = device, steps
        self.chunk: _Chunk | None = None  # finished rows' lanes go stale
        self.ahead: Future[_Chunk] | None = None  # the chunk after ``chunk`` (drawn, or being drawn)
        self.length = _FIRST_CHUNK
        if vocab and seeds and device.type == "cpu":  # step 0's chunk, drawn while the prompts prefill
            self.ahead = self._draw(list(range(len(seeds))), 0, vocab)

    def at(self, step: int, lanes: list[int], size: int) -> torch.Tensor:
        """The draws of ``step`` for the rows ``lanes`` (positions in ``seeds``), ``[len(lanes), size]``."""
        import torch

        if self.device.type != "cpu":  # elsewhere one call of n draws need not equal n calls of one: keep those
            return torch.stack([torch.empty(size, dtype=torch.float32, device=self.device).exponential_(
                1, generator=self.generators[lane]) for lane in lanes])
        chunk = self.chunk
        if chunk is None or step >= chunk.end:
            chunk = self.ahead.result() if self.ahead is not None else None
            if chunk is not None and chunk.size != size:  # step 0's chunk for a wrong vocabulary hint: start again
                for generator, seed in zip(self.generators, self.seeds, strict=True):
                    generator.manual_seed(seed)
                self.length, chunk = _FIRST_CHUNK, None
            if chunk is None:
                chunk = _Chunk(self.generators, lanes, step, self._count(step, size), size)
            assert chunk.start == step, "draws are consumed one step after another"
            self.chunk, self.ahead = chunk, None
            if chunk.end < self.steps:  # rows that are still going after a chunk probably go on
                self.ahead = self._draw(lanes, chunk.end, size)
        return chunk.buffer[torch.tensor(lanes), step - chunk.start]

    def _draw(self, lanes: list[int], step: int, size: int) -> Future[_Chunk]:
        """The next chunk from ``step``: in the draw-ahead thread, or here when it is too small to be worth a hand-off."""
        count = self._count(step, size)
        if len(lanes) * count * size >= _AHEAD_FLOATS:
            return _ahead().submit(_Chunk, self.generators, lanes, step, count, size)
        done: Future[_Chunk] = Future()
        done.set_result(_Chunk(self.generators, lanes, step, count, size))
        return done

    def _count(self, step: int, size: int) -> int:
        count = max(1, min(self.length, _DRAW_BUDGET // size, self.steps - step))
        self.length *= 2
        return count


def _ahead() -> ThreadPoolExecutor:
    """The thread that draws chunks ahead, one per process (a fork's child makes its own)."""
    global _AHEAD
    if _AHEAD is None or _AHEAD[0] != os.getpid():
        _AHEAD = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="policy-draws"))
    return _AHEAD[1]


#: The draw-ahead thread's executor and the process it belongs to.
_AHEAD: tuple[int, ThreadPoolExecutor] | None = None


class BatchSampler:
    """The sampling parameters of a batch's rows, as tensors, and their generators."""

    def __init__(self, params: list[SamplingParams], seeds: list[int], steps: int, device: torch.device,
                 vocab: int | None = None) -> None:
        """``vocab``: the logits' width, where known before the first step (its draws then start at once)."""
        import torch

        greedy = [p.temperature < GREEDY_BELOW for p in params]
        self.sampled = [i for i, g in enumerate(greedy) if not g]
        self.any_greedy = any(greedy)
        self.temps = torch.tensor([1.0 if g else p.temperature for p, g in zip(params, greedy, strict=True)],
                                  device=device)[:, None]
        self.device = device
        top_k = [p.top_k for p in params]
        top_p = [p.top_p for p in params]
        self.top_k = top_k
        # the old loop compared with a Python float, which torch casts to the tensor's dtype: float32
        self.top_p = torch.tensor(top_p, device=device, dtype=torch.float32)[:, None]
        self.nucleus = torch.tensor([p < 1.0 for p in top_p], device=device)[:, None]
        self.any_nucleus = any(p < 1.0 for p in top_p)
        self.want_top = max(p.top_logprobs for p in params)
        self.draws = _Draws([seeds[i] for i in self.sampled], device, steps, vocab)
        self._lane = {row: lane for lane, row in enumerate(self.sampled)}

    def choose(self, logits: torch.Tensor, step: int, active: list[bool] | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, _Top | None]:
        """The next token of every row, its logprob, and the top logprobs when any row asked for them.

        Args:
            logits: ``[rows, vocab]`` float32, a constraint's mask applied.
            step: The step's index (from 0).
            active: Which rows still sample (None: all); a finished row draws nothing, as before.
        """
        import torch

        logp = torch.log_softmax(logits / self.temps, dim=-1)
        rows = [i for i in self.sampled if active is None or active[i]]
        # the greedy rows' tokens; a batch of sampled rows only needs a placeholder for its finished ones
        tokens = logits.argmax(dim=-1) if self.any_greedy else torch.zeros(len(logits), dtype=torch.long,
                                                                             device=logits.device)
        if rows:
            index = torch.tensor(rows, device=logits.device)
            probs = torch.softmax(self._filtered(logp[index], rows, index), dim=-1)
            size = probs.shape[-1]
            race = self.draws.at(step, [self._lane[i] for i in rows], size)
            tokens[index] = (probs / race).argmax(dim=-1)
        chosen = logp.gather(1, tokens[:, None])[:, 0]
        top = None
        if self.want_top:
            values, ids = torch.topk(logp, min(self.want_top, logp.shape[-1]), dim=-1)
            top = _Top(ids, values)
        return tokens, chosen, top

    def _filtered(self, scores: torch.Tensor, rows: list[int], index: torch.Tensor) -> torch.Tensor:
        """Top-k then top-p, as the old per-row loop did them (the same comparisons, in float32)."""
        import torch

        size = scores.shape[-1]
        ks = [self.top_k[i] if 0 < self.top_k[i] < size else 0 for i in rows]
        nucleus = self.any_nucleus and bool(self.nucleus[index].any())
        if not any(ks) and not nucleus:
            return scores
        if any(ks):
            ordered = torch.sort(scores, dim=-1, descending=True).values
            kth = ordered.gather(1, torch.tensor([max(k, 1) - 1 for k in ks], device=scores.device)[:, None])
            kth = torch.where(torch.tensor(ks, device=scores.device)[:, None] > 0, kth, -torch.inf)
            scores = scores.masked_fill(scores < kth, -torch.inf)
        if nucleus:
            ordered, order = torch.sort(scores, dim=-1, descending=True)
            probs = torch.softmax(ordered, dim=-1)
            drop = (torch.cumsum(probs, dim=-1) - probs) >= self.top_p[index]
            drop[:, 0] = False
            drop &= self.nucleus[index]
            scores = scores.scatter(1, order, ordered.masked_fill(drop, -torch.inf))
        return scores
