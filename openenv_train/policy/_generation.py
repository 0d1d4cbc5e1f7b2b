"""Batched sampling from a causal LM, token by token, with exact ids and logprobs per row (no asyncio here).

Rows of one batch may differ in prompt length (left padding) and in every sampling parameter. Each row owns a
``torch.Generator`` seeded from its request, so a seeded row samples the same tokens whatever else shares its batch.

Logprobs are ``log_softmax(logits / temperature)`` of the token sampled (raw logits when the temperature is 0),
before top-p/top-k filtering: what TRL recomputes in its loss (it divides the logits by the temperature and
filters nothing), and what vLLM returns by default (``raw_logprobs``) at temperature 1.

A row with a guide (constrained decoding, :mod:`._guide`) samples from the *masked* distribution: logits of
tokens the constraint forbids are set to -inf before the temperature, so its logprobs (returned, captured, and
its top logprobs) are ``log_softmax(masked_logits / temperature)``, renormalised over the allowed tokens (a forced
token has logprob 0). That is the distribution actually sampled, which vLLM's guided decoding also reports.

torch and transformers are imported when a batch runs, so importing this module is cheap.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._errors import BackendFailed, InvalidRequest
from ._types import FinishReason, SamplingParams

if TYPE_CHECKING:
    import torch

__all__ = ["Row", "RowOutput", "generate_rows"]


@dataclass
class Row:
    """One completion to sample: the prompt ids, the parameters and the limits resolved by the backend."""

    prompt: list[int]
    params: SamplingParams
    max_new: int
    seed: int
    stop_ids: frozenset[int]
    guide: Any = None
    """A :class:`~._guide.Guide` restricting the tokens (constrained decoding), or None."""


@dataclass
class RowOutput:
    """What a row produced: sampled ids and their logprobs, the text and why it ended."""

    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[list[tuple[int, float]]] = field(default_factory=list)
    finish_reason: FinishReason = "length"
    text: str = ""
    error: BackendFailed | InvalidRequest | None = None


class _State:
    """Sampling state of one row while the batch runs."""

    def __init__(self, row: Row, device: torch.device, tokenizer: Any) -> None:
        self.row = row
        self.out = RowOutput()
        self.done = False
        self.by_token = False
        self.tokenizer = tokenizer
        import torch

        self.generator = torch.Generator(device=device).manual_seed(row.seed)
        self.guide_state = row.guide.start() if row.guide is not None else None

    def push(self, token: int, logprob: float, top: list[tuple[int, float]] | None) -> None:
        out, row = self.out, self.row
        if row.guide is not None:
            self.guide_state = row.guide.advance(self.guide_state, token)
        out.token_ids.append(token)
        out.logprobs.append(logprob)
        if top is not None:
            out.top_logprobs.append(top)
        if token in row.stop_ids:
            self.done, self.by_token, out.finish_reason = True, True, "stop"
        elif row.params.stop and self._stop_string():
            self.done, out.finish_reason = True, "stop"
        elif len(out.token_ids) >= row.max_new:
            self.done = True

    def _stop_string(self) -> bool:
        """End at a stop string: the text stops before it, and so do the ids (tokens that reach into it are
        dropped with their logprobs), so the completion's ids are the text the caller sees."""
        out, decode = self.out, self.tokenizer.decode
        text = decode(out.token_ids, skip_special_tokens=True)
        hits = [i for i in (text.find(s) for s in self.row.params.stop) if i >= 0]
        if not hits:
            return False
        out.text = text[: min(hits)]
        keep = len(out.token_ids)
        while keep and len(decode(out.token_ids[:keep], skip_special_tokens=True)) > len(out.text):
            keep -= 1
        del out.token_ids[keep:], out.logprobs[keep:], out.top_logprobs[keep:]
        return True

    def finish(self) -> RowOutput:
        out = self.out
        if out.error is None and not (out.finish_reason == "stop" and not self.by_token):
            ids = out.token_ids[:-1] if self.by_token else out.token_ids
            out.text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return out


def _sample(scores: torch.Tensor, params: SamplingParams, generator: torch.Generator) -> int:
    """Draw one token from temperature-scaled log-probabilities after top-k and top-p filtering."""
    import torch

    scores = scores.clone()
    if 0 < params.top_k < scores.numel():
        kth = torch.topk(scores, params.top_k).values[-1]
        scores[scores < kth] = -torch.inf
    if params.top_p < 1.0:
        ordered, order = torch.sort(scores, descending=True)
        probs = torch.softmax(ordered, dim=-1)
        drop = (torch.cumsum(probs, dim=-1) - probs) >= params.top_p
        drop[0] = False
        scores[order[drop]] = -torch.inf
    return int(torch.multinomial(torch.softmax(scores, dim=-1), 1, generator=generator).item())


def _mask(logits: torch.Tensor, states: list[_State]) -> torch.Tensor:
    """Set the logits a row's guide forbids to -inf (one index op for all guided rows); a guided row at a dead end
    (its regex cannot be continued with this tokenizer's tokens) fails."""
    import torch

    guided = [i for i, s in enumerate(states) if s.row.guide is not None and not s.done]
    if not guided:
        return logits
    allowed = [states[i].row.guide.allowed(states[i].guide_state) for i in guided]
    for i, ids in zip(guided, allowed, strict=True):
        if not len(ids):
            states[i].out.error = InvalidRequest("the constraint cannot be continued with this model's tokens after "
                                                 f"{states[i].out.token_ids!r}", param="guided_regex")
            states[i].done = True
    rows = torch.repeat_interleave(torch.tensor(guided), torch.tensor([len(a) for a in allowed]))
    cols = torch.cat(allowed).to(logits.device)
    rows = rows.to(logits.device)
    masked = logits.clone()
    index = torch.tensor(guided, device=logits.device)
    masked[index] = -torch.inf
    masked[rows, cols] = logits[rows, cols]
    return masked


def _step(logits: torch.Tensor, states: list[_State]) -> list[int]:
    """Choose the next token of every unfinished row; finished rows get 0 (ignored)."""
    import torch

    finite = torch.isfinite(logits).all(dim=-1).tolist()
    logits = _mask(logits, states)
    temps = torch.tensor([s.row.params.temperature or 1.0 for s in states], device=logits.device)
    logp = torch.log_softmax(logits / temps[:, None], dim=-1)
    greedy = logits.argmax(dim=-1).tolist()
    tokens = []
    for i, state in enumerate(states):
        if state.done:
            tokens.append(0)
            continue
        if not finite[i]:
            state.out.error = BackendFailed("the model produced non-finite logits for this request")
            state.done = True
            tokens.append(0)
            continue
        params = state.row.params
        token = greedy[i] if params.temperature == 0 else _sample(logp[i], params, state.generator)
        top = None
        if params.top_logprobs:
            values, ids = torch.topk(logp[i], params.top_logprobs)
            top = [(t, v) for t, v in zip(ids.tolist(), values.tolist(), strict=True) if v != -torch.inf]
        state.push(token, float(logp[i, token]), top)
        tokens.append(token)
    return tokens


def _forward_names(model: Any) -> tuple[str, bool]:
    """The cache keyword (``cache`` on transformers >= 5.24, ``past_key_values`` before) and whether the model
    takes ``logits_to_keep``."""
    try:
        names = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values", False
    return ("cache" if "cache" in names else "past_key_values"), "logits_to_keep" in names


def generate_rows(model: Any, tokenizer: Any, rows: list[Row], *, pad_id: int) -> list[RowOutput]:
    """Sample every row to its end (a stop token, a stop string or ``max_new`` tokens) in one left-padded batch.

    Raises:
        Exception: whatever the model raises; the caller decides whom it fails.
    """
    import torch

    with torch.inference_mode():
        return _generate(model, tokenizer, rows, pad_id)


def _generate(model: Any, tokenizer: Any, rows: list[Row], pad_id: int) -> list[RowOutput]:
    import torch
    from transformers import DynamicCache

    device = model.device
    width = max(len(r.prompt) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, width - len(row.prompt):] = torch.tensor(row.prompt)
        mask[i, width - len(row.prompt):] = 1
    ids, mask = ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache_name, keeps = _forward_names(model)
    cache = {cache_name: DynamicCache(config=model.config)}  # filled in place by every forward
    first = {"logits_to_keep": 1} if keeps else {}
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **cache, **first)
    states = [_State(r, device, tokenizer) for r in rows]
    next_pos = positions[:, -1:] + 1
    for _ in range(max(r.max_new for r in rows)):
        tokens = _step(out.logits[:, -1, :].float(), states)
        if all(s.done for s in states):
            break
        mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=-1)
        out = model(input_ids=torch.tensor(tokens, device=device)[:, None], attention_mask=mask,
                    position_ids=next_pos, use_cache=True, **cache)
        next_pos = next_pos + 1
    return [s.finish() for s in states]
