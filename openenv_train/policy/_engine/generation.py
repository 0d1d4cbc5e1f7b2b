"""Batched sampling from a causal LM, token by token, with exact ids and logprobs per row (no asyncio here).

Rows of one batch may differ in prompt length (left padding) and in every sampling parameter. Each row owns a
``torch.Generator`` seeded from its request, so a seeded row samples the same tokens whatever else shares its batch
(and the same as ``torch.multinomial`` with that generator, step by step: :mod:`.sampling`). A step is a handful
of tensor operations for the whole batch; rows with a constraint or stop strings do Python work per token, and
sampled rows (temperature > 0) take their random draws from per-row buffers a helper thread fills steps ahead.

Logprobs are ``log_softmax(logits / temperature)`` of the token sampled (raw logits when the temperature is 0),
before top-p/top-k filtering: what TRL recomputes in its loss (it divides the logits by the temperature and
filters nothing), and what vLLM returns by default (``raw_logprobs``) at temperature 1.

A row with a guide (constrained decoding, :mod:`.guide`) samples from the *masked* distribution: logits of
tokens the constraint forbids are set to -inf before the temperature, so its logprobs (returned, captured, and
its top logprobs) are ``log_softmax(masked_logits / temperature)``, renormalised over the allowed tokens (a forced
token has logprob 0). That is the distribution actually sampled, which vLLM's guided decoding also reports.

torch and transformers are imported when a batch runs, so importing this module is cheap.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import BackendFailed, InvalidRequest, PolicyError
from .._types import FinishReason, SamplingParams
from .prefix_cache import CachedPrefix, PrefixCache, weights_fingerprint
from .sampling import BatchSampler

if TYPE_CHECKING:
    import torch

    from .llama_decode import FastDecoder

__all__ = ["Row", "RowOutput", "RowStream", "generate_rows"]


class RowStream(Protocol):
    """Where a streamed row's tokens go as they are sampled (called from the generating thread)."""

    @property
    def cancelled(self) -> bool:
        """True once nobody wants the rest: the row stops at the next step."""
        ...

    def push(self, token: int, logprob: float, top: list[tuple[int, float]]) -> None:
        """One sampled token, its logprob and its top alternatives (empty unless asked for)."""
        ...


@dataclass
class Row:
    """One completion to sample: the prompt ids, the parameters and the limits resolved by the backend."""

    prompt: list[int]
    params: SamplingParams
    max_new: int
    seed: int
    stop_ids: frozenset[int]
    guide: Any = None
    """A :class:`~.guide.Guide` restricting the tokens (constrained decoding), or None."""
    stream: RowStream | None = None
    """Receives each token as it is sampled (a streamed request), or None."""
    constraint: Any = None
    """The :class:`~._types.Constraint` that ``guide`` enforces: an engine in another process builds its own guide
    from it (guides hold tensors and tries too large to send with every request)."""


@dataclass
class RowOutput:
    """What a row produced: sampled ids and their logprobs, the text and why it ended."""

    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[list[tuple[int, float]]] = field(default_factory=list)
    finish_reason: FinishReason = "length"
    text: str = ""
    error: PolicyError | None = None
    cut: bool = False
    """The row stopped early because its stream was cancelled (its client left)."""
    stop_sequence: str | None = None
    """The stop string that ended the row, when one did."""
    version: Any = None
    """The policy version the backend decoded it under (set by the backend, not here)."""
    score: float | None = None
    """A beam's score (beam search, :mod:`.beam`); None for a sampled row."""
    beams: list[RowOutput] | None = None
    """Beam search: every beam found, best first (this output is the first); None for a sampled row."""


class _Slow:
    """Per-token Python state of a row with a guide or stop strings."""

    def __init__(self, row: Row) -> None:
        self.row = row
        self.guide_state = row.guide.start() if row.guide is not None else None
        self.ids: list[int] = []
        self.text: str | None = None  # the text, when a stop string ended the row
        self.stop: str | None = None  # and that stop string


def _stop_string(tokenizer: Any, slow: _Slow) -> int | None:
    """Where a stop string ends the row, as a number of ids to keep, or None. The text stops before the stop
    string, and so do the ids (tokens that reach into it are dropped with their logprobs), so the completion's ids
    are the text the caller sees."""
    decode, ids = tokenizer.decode, slow.ids
    text = decode(ids, skip_special_tokens=True)
    hits = [(i, s) for i, s in ((text.find(s), s) for s in slow.row.params.stop) if i >= 0]
    if not hits:
        return None
    at, slow.stop = min(hits)
    slow.text = text[:at]
    keep = len(ids)
    while keep and len(decode(ids[:keep], skip_special_tokens=True)) > len(slow.text):
        keep -= 1
    return keep


def _mask(logits: torch.Tensor, slows: dict[int, _Slow], done: list[bool], errors: dict[int, PolicyError]) -> torch.Tensor:
    """Set the logits a row's guide forbids to -inf (one index op for all guided rows); a guided row at a dead end
    (its regex cannot be continued with this tokenizer's tokens) fails."""
    import torch

    guided = [i for i, s in slows.items() if s.row.guide is not None and not done[i]]
    if not guided:
        return logits
    allowed = [slows[i].row.guide.allowed(slows[i].guide_state) for i in guided]
    for i, ids in zip(guided, allowed, strict=True):
        if not len(ids):
            errors[i] = InvalidRequest("the constraint cannot be continued with this model's tokens after "
                                       f"{slows[i].ids!r}", param="guided_regex")
    rows = torch.repeat_interleave(torch.tensor(guided), torch.tensor([len(a) for a in allowed])).to(logits.device)
    cols = torch.cat(allowed).to(logits.device)
    masked = logits.clone()
    masked[torch.tensor(guided, device=logits.device)] = -torch.inf
    masked[rows, cols] = logits[rows, cols]
    return masked


def _same_prompts(rows: list[Row]) -> tuple[torch.Tensor, torch.Tensor] | None:
    """For a batch where some rows share their prompt: the first row of each distinct prompt, and for every row
    the position of its prompt among those; None when every prompt differs."""
    import torch

    position: dict[tuple[int, ...], int] = {}
    unique: list[int] = []
    spread: list[int] = []
    for i, row in enumerate(rows):
        key = tuple(row.prompt)
        if key not in position:
            position[key] = len(unique)
            unique.append(i)
        spread.append(position[key])
    return None if len(unique) == len(rows) else (torch.tensor(unique), torch.tensor(spread))


def _forward_names(model: Any) -> tuple[str, bool]:
    """The cache keyword (``cache`` on transformers >= 5.24, ``past_key_values`` before) and whether the model
    takes ``logits_to_keep``."""
    try:
        names = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values", False
    return ("cache" if "cache" in names else "past_key_values"), "logits_to_keep" in names


def _vocab(model: Any) -> int | None:
    """The logits' width, from the output embedding (None where a model has none to read)."""
    try:
        return int(model.get_output_embeddings().weight.shape[0])
    except (AttributeError, TypeError, IndexError):
        return None


def generate_rows(model: Any, tokenizer: Any, rows: list[Row], *, pad_id: int, fast: bool = True,
                  prefix: PrefixCache | None = None, version: Any = None,
                  on_step: Callable[[], None] | None = None) -> list[RowOutput]:
    """Sample every row to its end (a stop token, a stop string or ``max_new`` tokens) in one left-padded batch.

    Args:
        fast: Decode with :class:`~.llama_decode.FastDecoder` where it supports the model (else transformers' forward).
        prefix: Keys and values of earlier sequences: a row whose prompt starts with one prefills only the rest,
            and every row's prompt and completion are stored in it (fast decoding only).
        version: The policy version (e.g. the trainer's step): a new one drops ``prefix``'s entries.
        on_step: Called after each step's tokens were pushed to the rows' streams (an engine in another process
            sends them on together).

    Raises:
        Exception: whatever the model raises; the caller decides whom it fails.
    """
    import torch

    from .llama_decode import FastDecoder

    # A trainer's model is in train mode; with gradient checkpointing on, transformers < 5.17 (Oumi's pin) drops the
    # KV cache in train mode. Sampling is done in eval mode (no dropout either), and the mode is restored after.
    training = bool(getattr(model, "training", False))
    with torch.inference_mode():
        if prefix is not None and fast and FastDecoder.supports(model):
            prefix.check_weights(weights_fingerprint(model, version))
        else:
            prefix = None
        if training:
            model.eval()
        try:
            return _Batch(model, tokenizer, rows, pad_id, on_step).run(fast=fast, prefix=prefix)
        finally:
            if training:
                model.train()


class _Batch:
    """One batch's decode loop: prompts prefilled together, then one forward and one sampling step per token,
    into preallocated id/logprob tensors and a preallocated attention mask."""

    def __init__(self, model: Any, tokenizer: Any, rows: list[Row], pad_id: int,
                 on_step: Callable[[], None] | None = None) -> None:
        import torch

        self.model, self.tokenizer, self.rows, self.pad_id, self.on_step = model, tokenizer, rows, pad_id, on_step
        self.device = model.device
        self.steps = max(r.max_new for r in rows)
        self.width = max(len(r.prompt) for r in rows)
        count = len(rows)
        self.ids = torch.full((count, self.steps), pad_id, dtype=torch.long, device=self.device)
        self.logprobs = torch.zeros((count, self.steps), dtype=torch.float32, device=self.device)
        stops = [sorted(r.stop_ids) for r in rows]
        most = max(len(s) for s in stops)
        self.stop = torch.tensor([s + [-1] * (most - len(s)) for s in stops], device=self.device)
        self.max_new = torch.tensor([r.max_new for r in rows], device=self.device)
        self.sampler = BatchSampler([r.params for r in rows], [r.seed for r in rows], self.steps, self.device,
                                    _vocab(model))
        self.slows = {i: _Slow(r) for i, r in enumerate(rows) if r.guide is not None or r.params.stop}
        self.errors: dict[int, PolicyError] = {}
        self.tops: list[Any] = []
        self.streams = {i: r.stream for i, r in enumerate(rows) if r.stream is not None}
        self.cut: set[int] = set()

    def run(self, *, fast: bool, prefix: PrefixCache | None = None) -> list[RowOutput]:
        logits_now = self.prefill(fast=fast, prefix=prefix)
        for step in range(self.steps):
            tokens = self.sample(step, logits_now)
            if tokens is None:
                break
            logits_now = self._forward(step, tokens)
        if prefix is not None and self.decoder is not None:
            decoder, width = self.decoder, self.width
            self.store(prefix, lambda i, start, fed: decoder.slice(i, width - start, width + fed))
        return self.outputs()

    def prefill(self, *, fast: bool, prefix: PrefixCache | None = None, slots: int | None = None) -> torch.Tensor:
        """Prefill every prompt; the logits of each row's next token. ``slots``: the fast decoder's length (the
        prompts' width plus every step by default; the prompts' alone for rows whose steps decode elsewhere)."""
        import torch
        from transformers import DynamicCache

        from .llama_decode import FastDecoder

        rows, width, count = self.rows, self.width, len(self.rows)
        steps = self.steps if slots is None else slots - width
        lengths = torch.tensor([len(r.prompt) for r in rows], device=self.device)
        mask = torch.zeros((count, width + self.steps), dtype=torch.long, device=self.device)
        mask[:, :width] = torch.arange(width, device=self.device)[None, :] >= (width - lengths)[:, None]
        positions = (mask[:, :width].cumsum(-1) - 1).clamp(min=0)
        hits = [prefix.lookup(r.prompt) for r in rows] if prefix is not None else []
        self.cache: dict[str, Any] = {}
        self.decoder: FastDecoder | None
        if any(hits):
            self.decoder = reusing = FastDecoder(self.model, count, width + steps)
            logits_now = self._prefill_cached(reusing, hits, mask, positions)
        else:
            cache_name, keeps = _forward_names(self.model)
            first = {"logits_to_keep": 1} if keeps else {}
            ids = torch.tensor([[self.pad_id] * (width - len(r.prompt)) + r.prompt for r in rows], device=self.device)

            def prefill(pick: Any) -> tuple[torch.Tensor, dict[str, Any]]:
                cache = {cache_name: DynamicCache(config=self.model.config)}  # filled in place by every forward
                out = self.model(input_ids=ids[pick], attention_mask=mask[pick, :width], position_ids=positions[pick],
                                 use_cache=True, **cache, **first)
                return out.logits[:, -1, :], cache

            # Rows with the same prompt (a GRPO group's first turn) are prefilled once; the static cache takes
            # each row's copy. transformers' own decode steps keep its cache, so they prefill every row.
            shared = _same_prompts(rows) if fast and FastDecoder.supports(self.model) else None
            self.decoder = None
            if shared is not None:
                logits_now, self.cache = prefill(shared[0])
                self.decoder = FastDecoder.build(self.model, self.cache[cache_name], count, width, steps,
                                                 spread=shared[1])
                logits_now = logits_now[shared[1]]
            if self.decoder is None:
                logits_now, self.cache = prefill(slice(None))
                self.decoder = FastDecoder.build(self.model, self.cache[cache_name], count, width, steps) \
                    if fast else None
        self.mask = mask
        self.attend = mask.bool()[:, None, None, :]  # the same mask as sdpa takes it, kept in step with mask
        self.done = torch.zeros(count, dtype=torch.bool, device=self.device)
        self.by_token = torch.zeros_like(self.done)
        self.produced = torch.zeros(count, dtype=torch.long, device=self.device)
        self.ended: list[bool] = [False] * count
        """Which rows have ended, as of the last :meth:`sample`."""
        self.next_pos = positions[:, -1:] + 1
        return logits_now

    def sample(self, step: int, logits_now: torch.Tensor) -> torch.Tensor | None:
        """Step ``step``: every row's next token from its logits (a finished row's is padding), pushed to the
        streams; None once every row has ended."""
        import torch

        done, count = self.done, len(self.rows)
        if self.streams:
            done |= self._cancelled(done)
        logits = self._checked(logits_now.float(), done)
        if self.slows:
            logits = _mask(logits, self.slows, done.tolist(), self.errors)
            done |= self._failed(count)
        active = ~done
        tokens, chosen, top = self.sampler.choose(logits, step, active.tolist() if self.sampler.sampled else None)
        tokens = torch.where(active, tokens, self.pad_id)
        self.ids[:, step], self.logprobs[:, step] = tokens, chosen
        if top is not None:
            self.tops.append(top)
        self.produced += active
        hit = (tokens[:, None] == self.stop).any(dim=-1) & active
        self.by_token |= hit
        done |= hit | (self.produced >= self.max_new)
        if self.slows:
            self._advance(tokens.tolist(), active.tolist(), hit.tolist(), self.produced, done)
        if self.streams:
            self._push(tokens, chosen, active, top)
            if self.on_step is not None:
                self.on_step()
        self.ended = done.tolist()
        return None if all(self.ended) else tokens

    def _forward(self, step: int, tokens: torch.Tensor) -> torch.Tensor:
        """The logits after feeding this step's tokens, through the batch's own decoder (or transformers')."""
        width = self.width
        self.mask[:, width + step] = 1
        if self.decoder is not None:
            self.attend[:, :, :, width + step] = True
            logits = self.decoder.step(tokens, self.next_pos, width + step, self.attend[:, :, :, : width + step + 1])
        else:
            logits = self.model(input_ids=tokens[:, None], attention_mask=self.mask[:, : width + step + 1],
                                position_ids=self.next_pos, use_cache=True, **self.cache).logits[:, -1, :]
        self.next_pos = self.next_pos + 1
        return logits

    def _prefill_cached(self, decoder: FastDecoder, hits: list[CachedPrefix | None], mask: torch.Tensor,
                        positions: torch.Tensor) -> torch.Tensor:
        """Load each hit's keys and values where its row's prompt starts, and prefill the rest of every prompt in
        one block (a row without a hit prefills all of it)."""
        import torch

        width, device = self.width, self.device
        new = [len(r.prompt) - (len(h.ids) if h else 0) for r, h in zip(self.rows, hits, strict=True)]
        block = max(new)
        for i, (row, hit) in enumerate(zip(self.rows, hits, strict=True)):
            if hit is not None:
                decoder.load(i, width - len(row.prompt), hit.layers)
        tokens = torch.tensor([[self.pad_id] * (block - n) + r.prompt[len(r.prompt) - n:]
                               for r, n in zip(self.rows, new, strict=True)], device=device)
        valid = torch.arange(block, device=device)[None, :] >= (block - torch.tensor(new, device=device))[:, None]
        slots = torch.arange(width, device=device)
        causal = slots[None, :] <= (width - block + torch.arange(block, device=device))[:, None]  # [block, width]
        attend = mask[:, None, :width].bool() & causal[None]
        attend = torch.where(valid[:, :, None], attend, slots == width - 1)  # padding queries: any finite row
        return decoder.prefill(tokens, positions[:, width - block:], valid, width, attend[:, None])

    def store(self, prefix: PrefixCache, keys_of: Callable[[int, int, int], Any]) -> None:
        """Keep each finished row's prompt and completion (but its last token, never fed back) in ``prefix``;
        ``keys_of(row, prompt_length, fed)`` gives the row's keys and values of those tokens."""
        ids, produced = self.ids.tolist(), self.produced.tolist()
        for i, row in enumerate(self.rows):
            if i in self.errors or not produced[i]:
                continue
            fed = produced[i] - 1
            prefix.store(row.prompt + ids[i][:fed], keys_of(i, len(row.prompt), fed))

    def _cancelled(self, done: torch.Tensor) -> torch.Tensor:
        """Rows whose stream was cancelled stop here: they sample nothing more (their slot idles until the batch
        ends, and the batch ends as soon as every other row has)."""
        import torch

        stop = torch.zeros_like(done)
        finished = done.tolist()
        for i, stream in self.streams.items():
            if stream.cancelled and not finished[i] and i not in self.cut:
                self.cut.add(i)
                stop[i] = True
        return stop

    def _push(self, tokens: torch.Tensor, chosen: torch.Tensor, active: torch.Tensor, top: Any) -> None:
        """Hand this step's token of each active streamed row to its stream."""
        ids, values, live = tokens.tolist(), chosen.tolist(), active.tolist()
        for i, stream in self.streams.items():
            if not live[i]:
                continue
            k = self.rows[i].params.top_logprobs
            alternatives = [(t, v) for t, v in zip(top.ids[i, :k].tolist(), top.values[i, :k].tolist(), strict=True)
                            if v != float("-inf")] if k and top is not None else []
            stream.push(ids[i], values[i], alternatives)

    def _checked(self, logits: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
        import torch

        bad = ~torch.isfinite(logits.sum(dim=-1)) & ~done  # a nan or an infinity makes the row's sum one
        if bool(bad.any()):
            bad &= ~torch.isfinite(logits).all(dim=-1)  # not a sum of huge finite logits that overflowed
            for i in bad.nonzero()[:, 0].tolist():
                self.errors[i] = BackendFailed("the model produced non-finite logits for this request")
            done |= bad
            logits = torch.where(bad[:, None], 0.0, logits)  # sampled and discarded: keeps the step finite
        return logits

    def _failed(self, count: int) -> torch.Tensor:
        import torch

        failed = torch.zeros(count, dtype=torch.bool, device=self.device)
        failed[list(self.errors)] = True
        return failed

    def _advance(self, tokens: list[int], active: list[bool], hit: list[bool], produced: torch.Tensor,
                 done: torch.Tensor) -> None:
        """Python per token, for the rows that need it: move guides, look for stop strings."""
        for i, slow in self.slows.items():
            if not active[i]:
                continue
            slow.ids.append(tokens[i])
            if slow.row.guide is not None:
                slow.guide_state = slow.row.guide.advance(slow.guide_state, tokens[i])
            if slow.row.params.stop and not hit[i]:
                keep = _stop_string(self.tokenizer, slow)
                if keep is not None:
                    produced[i], done[i] = keep, True
                    del slow.ids[keep:]

    def outputs(self, which: list[int] | None = None) -> list[RowOutput]:
        """The outputs of the rows ``which`` (None: every row), in order, once each has ended."""
        which = list(range(len(self.rows))) if which is None else which
        produced, by_token = self.produced[which].tolist(), self.by_token[which].tolist()
        ids, logprobs = self.ids[which].tolist(), self.logprobs[which].tolist()
        outputs = []
        for j, i in enumerate(which):
            n = produced[j]
            out = RowOutput(ids[j][:n], logprobs[j][:n], self._top(i, n), error=self.errors.get(i), cut=i in self.cut)
            slow = self.slows.get(i)
            if by_token[j] or (slow is not None and slow.text is not None):
                out.finish_reason = "stop"
            outputs.append(out)
        texts = self.tokenizer.batch_decode([o.token_ids[:-1] if by_token[j] else o.token_ids
                                             for j, o in enumerate(outputs)], skip_special_tokens=True)
        for j, (i, out) in enumerate(zip(which, outputs, strict=True)):
            slow = self.slows.get(i)
            out.text = slow.text if slow is not None and slow.text is not None else texts[j]
            if slow is not None and slow.text is not None:
                out.stop_sequence = slow.stop
        return outputs

    def _top(self, row: int, steps: int) -> list[list[tuple[int, float]]]:
        k = self.rows[row].params.top_logprobs
        if not k:
            return []
        return [[(t, v) for t, v in zip(top.ids[row, :k].tolist(), top.values[row, :k].tolist(), strict=True)
                 if v != float("-inf")] for top in self.tops[:steps]]
