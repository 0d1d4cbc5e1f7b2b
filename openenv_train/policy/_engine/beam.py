"""Beam search for a batch of rows (``use_beam_search``): every request's beams decode together, one forward pass a
step for all of them.

A request of width ``W`` (its ``n``) keeps its ``W`` best unfinished sequences (beams) at each step, ranked by the
sum of the model's log-probabilities of their tokens. Every beam's extension by a stop token (an end of turn or a
``stop_token_ids`` id) is a finished sequence; the other extensions compete for the next step's ``W`` places. The
answer is the ``W`` best finished sequences (those cut at ``max_tokens`` included) by score, best first::

    score = cumulative_logprob / completion_tokens ** length_penalty

(``completion_tokens`` without the stop token, at least 1; vLLM counts the prompt's tokens too, which changes no
order between beams of one prompt when ``length_penalty`` is 0 and few otherwise; transformers counts the stop
token). A request stops as soon as no unfinished beam can beat its ``W``-th finished one (a sum of
log-probabilities only falls), so the result is the same as running to ``max_tokens``. transformers'
``generate(num_beams=W)`` keeps the same unfinished beams but finishes only the stop extensions among a step's
``W`` best candidates, so it may miss one of these answers (``tests/policy/test_beam_transformers.py``).

A row with a guide (``guided_choice``, a regex) extends its beams only along the tokens the guide allows, but its
scores and logprobs are the model's own, unmasked: the likelihood of the whole sequence, as a reranker scores it
(a sampled constrained row reports the renormalised, masked distribution instead, see :mod:`.generation`). With a
width at least the number of sequences a constraint allows, the beams are all of them, ranked by the model.

Decoding uses transformers' forward and its cache (beams move between lanes with ``Cache.reorder_cache``), on any
model; the prompts are prefilled once per request and each lane copies its request's keys and values.

torch is imported when a batch runs, so importing this module is cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .._errors import BackendFailed, InvalidRequest, PolicyError
from .generation import Row, RowOutput, _forward_names

__all__ = ["beam_rows", "beam_score"]


def beam_score(cumulative: float, tokens: int, length_penalty: float) -> float:
    """A finished beam's score: its summed logprob over its length (stop token excluded) to ``length_penalty``.

    >>> beam_score(-6.0, 3, 1.0), beam_score(-6.0, 3, 0.0)
    (-2.0, -6.0)
    """
    return cumulative / (max(tokens, 1) ** length_penalty)


@dataclass
class _Beam:
    """One sequence of a request: its tokens, their logprobs, their sum, its lane and its guide's state."""

    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    cumulative: float = 0.0
    lane: int = 0
    state: Any = None
    finish: str = "length"
    score: float = 0.0


class _Request:
    """A beam row's search: its live beams, its finished ones (the best ``width`` kept), its lanes."""

    def __init__(self, row: Row, base: int) -> None:
        self.row, self.base = row, base
        self.width = max(1, row.params.n)
        self.penalty = row.params.length_penalty
        self.live = [_Beam(lane=base, state=row.guide.start() if row.guide is not None else None)]
        self.finished: list[_Beam] = []
        self.error: PolicyError | None = None

    @property
    def active(self) -> bool:
        return bool(self.live) and self.error is None

    def finish(self, beam: _Beam) -> None:
        beam.score = beam_score(beam.cumulative, len(beam.tokens) - (beam.finish == "stop"), self.penalty)
        self.finished.append(beam)
        self.finished.sort(key=lambda b: -b.score)
        del self.finished[self.width:]

    def hopeless(self, produced: int) -> bool:
        """No live beam can finish above the ``width``-th finished one any more."""
        if len(self.finished) < self.width or not self.live:
            return not self.live
        best = max(b.cumulative for b in self.live)
        longest = self.row.max_new if self.penalty > 0 else produced
        return beam_score(best, longest, self.penalty) <= self.finished[-1].score


def beam_rows(model: Any, tokenizer: Any, rows: list[Row], *, pad_id: int) -> list[RowOutput]:
    """Every row's beams, decoded together: each output is its best beam, with all of them (best first) in
    ``beams``.

    Raises:
        Exception: whatever the model raises; the caller decides whom it fails.
    """
    import torch

    training = bool(getattr(model, "training", False))
    with torch.inference_mode():
        if training:
            model.eval()
        try:
            return _BeamBatch(model, tokenizer, rows, pad_id).run()
        finally:
            if training:
                model.train()


class _BeamBatch:
    """The decode loop: prefill each prompt once, copy it to its request's lanes, then one forward a step."""

    def __init__(self, model: Any, tokenizer: Any, rows: list[Row], pad_id: int) -> None:
        self.model, self.tokenizer, self.rows, self.pad_id = model, tokenizer, rows, pad_id
        self.requests: list[_Request] = []
        lanes = 0
        for row in rows:
            self.requests.append(_Request(row, lanes))
            lanes += self.requests[-1].width
        self.lanes = lanes

    def run(self) -> list[RowOutput]:
        import torch
        from transformers import DynamicCache

        model, rows, device = self.model, self.rows, self.model.device
        width = max(len(r.prompt) for r in rows)
        lengths = torch.tensor([len(r.prompt) for r in rows], device=device)
        prompt_mask = (torch.arange(width, device=device)[None, :] >= (width - lengths)[:, None]).long()
        positions = (prompt_mask.cumsum(-1) - 1).clamp(min=0)
        ids = torch.tensor([[self.pad_id] * (width - len(r.prompt)) + r.prompt for r in rows], device=device)
        name, _ = _forward_names(model)
        cache = DynamicCache(config=model.config)
        logits = model(input_ids=ids, attention_mask=prompt_mask, position_ids=positions, use_cache=True,
                       **{name: cache}).logits[:, -1, :]
        owner = torch.tensor([i for i, q in enumerate(self.requests) for _ in range(q.width)], device=device)
        cache.reorder_cache(owner)  # type: ignore[arg-type]  # each lane starts as a copy of its request's prompt
        logits, mask, next_pos = logits[owner], prompt_mask[owner], lengths[owner][:, None]
        steps = max(r.max_new for r in rows)
        for step in range(steps):
            parents, tokens = self._step(logits.float(), step)
            if not any(q.active for q in self.requests):
                break
            index = torch.tensor(parents, device=device)
            cache.reorder_cache(index)  # type: ignore[arg-type]  # (a LongTensor in its annotation)
            mask = torch.cat([mask, torch.ones((self.lanes, 1), dtype=mask.dtype, device=device)], dim=1)
            logits = model(input_ids=torch.tensor(tokens, device=device)[:, None], attention_mask=mask,
                           position_ids=next_pos, use_cache=True, **{name: cache}).logits[:, -1, :]
            next_pos = next_pos + 1
        return [self._output(q) for q in self.requests]

    def _step(self, logits: Any, step: int) -> tuple[list[int], list[int]]:
        """Extend every active request's beams by one token; each lane's parent lane and its next token."""
        import torch

        logp = torch.log_softmax(logits, dim=-1)
        parents, tokens = list(range(self.lanes)), [self.pad_id] * self.lanes
        for q in self.requests:
            if not q.active:
                continue
            row, beams = q.row, q.live
            lanes = torch.tensor([b.lane for b in beams], device=logp.device)
            own = logp[lanes]
            raw = logits[lanes]
            if not bool(torch.isfinite(raw.sum(dim=-1)).all()) and not bool(torch.isfinite(raw).all()):
                q.error, q.live = BackendFailed("the model produced non-finite logits for this request"), []
                continue
            scores = own + torch.tensor([b.cumulative for b in beams], device=own.device)[:, None]
            if row.guide is not None:
                allowed = [row.guide.allowed(b.state) for b in beams]
                keep = torch.full_like(scores, -torch.inf)
                for k, ids in enumerate(allowed):
                    keep[k, ids.to(own.device)] = scores[k, ids.to(own.device)]
                scores = keep
            size = scores.shape[-1]
            stops = [t for t in row.stop_ids if t < size]
            if stops:
                ended = scores[:, stops].tolist()
                for k, beam in enumerate(beams):
                    for stop, value in zip(stops, ended[k], strict=True):
                        if value > -math.inf:
                            q.finish(self._grown(beam, stop, own[k, stop].item(), value, "stop", row))
                scores[:, stops] = -torch.inf
            last = step + 1 >= row.max_new
            finite = int(torch.isfinite(scores).sum())
            grown = []
            if finite:
                values, flat = torch.topk(scores.flatten(), min(q.width, finite))
                for value, at in zip(values.tolist(), flat.tolist(), strict=True):
                    k, token = divmod(at, size)
                    grown.append(self._grown(beams[k], token, own[k, token].item(), value, "length", row))
            if last:
                for beam in grown:
                    q.finish(beam)
                grown = []
            for j, beam in enumerate(grown):
                lane = q.base + j
                parents[lane], tokens[lane] = beam.lane, beam.tokens[-1]
                beam.lane = lane
            q.live = grown
            if not grown and not q.finished and row.guide is not None:
                q.error = InvalidRequest("the constraint cannot be continued with this model's tokens",
                                         param=(row.constraint.field if row.constraint is not None
                                                else "guided_choice").partition(".")[0])
            if q.hopeless(step + 1):
                q.live = []
        return parents, tokens

    @staticmethod
    def _grown(beam: _Beam, token: int, logprob: float, cumulative: float, finish: str, row: Row) -> _Beam:
        state = beam.state
        if row.guide is not None and finish != "stop":  # a finished beam's guide is never asked again
            state = row.guide.advance(state, token)
        return _Beam([*beam.tokens, token], [*beam.logprobs, logprob], cumulative, beam.lane, state, finish)

    def _output(self, q: _Request) -> RowOutput:
        if q.error is not None or not q.finished:
            return RowOutput(error=q.error or BackendFailed("no beam ended: every continuation had probability 0"))
        texts = self.tokenizer.batch_decode([b.tokens[:-1] if b.finish == "stop" else b.tokens for b in q.finished],
                                            skip_special_tokens=True)
        beams = [RowOutput(b.tokens, b.logprobs, finish_reason="stop" if b.finish == "stop" else "length",
                           text=text, score=b.score) for b, text in zip(q.finished, texts, strict=True)]
        best = beams[0]
        return RowOutput(best.token_ids, best.logprobs, finish_reason=best.finish_reason, text=best.text,
                         score=best.score, beams=beams)
