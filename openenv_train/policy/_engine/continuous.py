"""Continuous batching: batches that join a decode already running, one forward pass per step for all of them.

Batches that arrive while others decode do not wait for them to end: those added together (a group) have their
prompts prefilled as one batch (prefix cache and shared prompts included), their keys and values move into the
running decode's lanes, and from the next step on one forward pass serves every row. Every lane writes a step's
token into the same slot (its earlier tokens end just before it, each lane starting where its own prompt does), so
a step is the fast decoder's :meth:`~.llama_decode.FastDecoder.step` over all lanes, as for one batch; the lanes
move left or right, all together, when a new prompt is longer than the slots before the current one or the buffer
is full. Each group keeps its own sampling state (a :class:`~.generation._Batch`: seeds, draws, guides, stops,
streams), so a seeded row samples what it would alone (but each group's sampling step is one more set of small
tensor operations a step); rows are handed over as each ends, a batch as soon as its rows have, and a group's lanes
are freed when its last row ends.

Only models the fast decoder reproduces decode this way (:meth:`ContinuousDecode.supports`); others decode a batch
at a time. Batches of different policy versions never share a step: one of a new version waits until the
running ones end.

torch is imported when a batch runs, so importing this module is cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .generation import Row, RowOutput, _Batch
from .prefix_cache import PrefixCache, weights_fingerprint

if TYPE_CHECKING:
    import torch

    from .llama_decode import FastDecoder

__all__ = ["ContinuousDecode", "Ended"]


@dataclass
class Ended:
    """Rows of a batch that ended: all of them (``rows`` None, the batch is done) with their outputs or the error
    that failed the batch, or the rows ``rows`` that ended before the rest (their outputs)."""

    key: Any
    outputs: list[RowOutput] | BaseException
    rows: list[int] | None = None


@dataclass(eq=False)
class _Member:
    """One batch of those admitted together: its key and its rows in the group."""

    key: Any
    start: int
    count: int
    ended: bool = False


@dataclass(eq=False)
class _Group:
    """Batches admitted together: their decode state, their first lane, their step."""

    members: list[_Member]
    batch: _Batch
    lane: int
    step: int = 0
    logits: torch.Tensor | None = None
    reported: set[int] = field(default_factory=set)
    """Rows whose outputs went out before their batch ended."""


class ContinuousDecode:
    """Decodes batches that arrive at any step, together (used from one thread).

    Args:
        model: A causal LM :meth:`supports` accepts.
        tokenizer: Its tokenizer.
        pad_id: Id that pads prompts on the left while they prefill.
        prefix: The prefix cache (None: off).
    """

    def __init__(self, model: Any, tokenizer: Any, pad_id: int, prefix: PrefixCache | None = None) -> None:
        self.model, self.tokenizer, self.pad_id, self.prefix = model, tokenizer, pad_id, prefix
        self.groups: list[_Group] = []
        self.version: Any = None
        """The policy version the running batches decode under."""
        self._lanes: FastDecoder | None = None
        self._attend: torch.Tensor | None = None  # [lanes, 1, 1, slots] bool: the slots each lane attends to
        self._positions: torch.Tensor | None = None  # [lanes, 1]: each lane's next position
        self._starts: list[int] = []  # each lane's first slot
        self._now = 0  # the slot this step's tokens go to, in every lane
        self._training = False

    @staticmethod
    def supports(model: Any) -> bool:
        """Whether ``model`` decodes this way (the fast decoder reproduces it)."""
        from .llama_decode import FastDecoder

        return FastDecoder.supports(model)

    @property
    def idle(self) -> bool:
        """No batch is decoding."""
        return not self.groups

    def admits(self, version: Any) -> bool:
        """Whether a batch of ``version`` may join now."""
        return self.idle or version == self.version

    def add(self, batches: list[tuple[Any, list[Row], Callable[[], None] | None]], version: Any = None) -> None:
        """Prefill the prompts of ``batches`` (each a key, its rows and what to call after each step that streamed
        its tokens, or None) together, and let their rows decode from the next :meth:`step` on.

        Raises:
            ValueError: ``version`` differs from the running batches' (see :meth:`admits`).
            Exception: whatever the model raises while prefilling (nothing else is affected).
        """
        import torch

        if not self.admits(version):
            raise ValueError(f"a batch of version {version!r} cannot join batches of version {self.version!r}")
        members: list[_Member] = []
        rows: list[Row] = []
        calls: list[Callable[[], None]] = []
        for key, part, on_step in batches:
            members.append(_Member(key, len(rows), len(part)))
            rows += part
            calls += [on_step] if on_step is not None else []
        with torch.inference_mode():
            if self.idle:
                self._training = bool(getattr(self.model, "training", False))
                if self._training:
                    self.model.eval()
                if self.prefix is not None:
                    self.prefix.check_weights(weights_fingerprint(self.model, version))
                self.version = version

            def flush() -> None:
                for call in calls:
                    call()

            batch = _Batch(self.model, self.tokenizer, rows, self.pad_id, flush if calls else None)
            first = self.idle  # its decoder becomes the lanes (room for more steps than its own: others may join)
            try:
                logits = batch.prefill(fast=True, prefix=self.prefix,
                                       slots=(batch.width + batch.steps) * 3 // 2 if first else batch.width)
            except BaseException:
                self._settle()
                raise
            assert batch.decoder is not None
            lane = len(self._starts)
            if first:
                self._lanes, self._now = batch.decoder, batch.width
            else:
                self._reserve(len(rows), batch.width, batch.steps)
            self._load(lane, batch, batch.decoder)
            batch.decoder = None  # its keys and values live in the lanes
            self.groups.append(_Group(members, batch, lane, logits=logits))

    def step(self) -> list[Ended]:
        """One token for every running row: the batches that ended, with their outputs, and the rows that ended
        before the rest of their batch; if the forward pass raised, every running batch with that error (they are
        dropped)."""
        import torch

        ended: list[Ended] = []
        with torch.inference_mode():
            tokens: list[torch.Tensor] = []
            for group in list(self.groups):
                assert group.logits is not None
                chosen = group.batch.sample(group.step, group.logits)
                if chosen is None:
                    ended += self._finish(group)
                    continue
                tokens.append(chosen)
                if sum(group.batch.ended) > len(group.reported):
                    ended += self._early(group)
            if not self.groups:
                self._settle()
                return ended
            lanes, attend, positions, now = self._lanes, self._attend, self._positions, self._now
            assert lanes is not None and attend is not None and positions is not None
            used = len(self._starts)
            attend[:used, :, :, now] = True
            try:
                logits = lanes.step(torch.cat(tokens) if len(tokens) > 1 else tokens[0], positions[:used], now,
                                    attend[:used, :, :, :now + 1])
            except Exception as exc:
                ended += [Ended(m.key, exc) for g in self.groups for m in g.members if not m.ended]
                self.groups.clear()
                self._settle()
                return ended
            self._now += 1
            positions[:used] += 1
            for group in self.groups:
                group.logits = logits[group.lane: group.lane + len(group.batch.rows)]
                group.step += 1
        return ended

    def _early(self, group: _Group) -> list[Ended]:
        """The rows that ended since the last step: a batch whose rows all have, whole; else those rows."""
        ended, done = [], group.batch.ended
        for member in group.members:
            if member.ended:
                continue
            span = range(member.start, member.start + member.count)
            if all(done[i] for i in span):
                member.ended = True
                group.reported.update(span)
                ended.append(Ended(member.key, group.batch.outputs(list(span))))
                continue
            new = [i for i in span if done[i] and i not in group.reported]
            if new:
                group.reported.update(new)
                ended.append(Ended(member.key, group.batch.outputs(new), [i - member.start for i in new]))
        return ended

    def _finish(self, group: _Group) -> list[Ended]:
        """The batches that had not ended yet, whole; the prompts and completions go to the prefix cache, the lanes to
        the batches after."""
        lanes, first, count, now = self._lanes, group.lane, len(group.batch.rows), self._now
        assert lanes is not None and self._attend is not None and self._positions is not None
        starts = self._starts
        if self.prefix is not None:
            group.batch.store(self.prefix, lambda i, prompt, fed: lanes.slice(first + i, starts[first + i],
                                                                              starts[first + i] + prompt + fed))
        ended = [Ended(m.key, group.batch.outputs(list(range(m.start, m.start + m.count))))
                 for m in group.members if not m.ended]
        used, low = len(starts), min(starts)
        if first + count < used:  # the lanes after move down over this group's
            for tensor in (*lanes.keys, *lanes.values):
                tensor[first:used - count, :, low:now] = tensor[first + count:used, :, low:now].clone()
            self._attend[first:used - count] = self._attend[first + count:used].clone()
            self._positions[first:used - count] = self._positions[first + count:used].clone()
            for later in self.groups:
                if later.lane > first:
                    later.lane -= count
        del starts[first:first + count]
        self.groups.remove(group)
        return ended

    def _reserve(self, rows: int, width: int, steps: int) -> None:
        """Room for ``rows`` more lanes whose prompts are up to ``width`` tokens and which decode up to ``steps``
        tokens: a larger buffer, or the running lanes moved (all by the same number of slots) so that the current
        slot has ``width`` slots before it and the buffer ends after every lane's last step."""
        from .llama_decode import FastDecoder

        old, used, now = self._lanes, len(self._starts), self._now
        low = min(self._starts, default=now)
        ahead = max([g.batch.steps - g.step for g in self.groups] + [steps])  # steps any lane may still take
        at = max(now - low, width)  # the current slot after a move
        have_rows, have_slots = (old.keys[0].shape[0], old.keys[0].shape[2]) if old is not None else (0, 0)
        if old is not None and used + rows <= have_rows and now >= width and now + ahead <= have_slots:
            return
        slots = have_slots if at + ahead <= have_slots else (at + ahead) * 3 // 2
        lanes = have_rows if used + rows <= have_rows else max(used + rows, have_rows * 3 // 2)
        new = FastDecoder(self.model, lanes, slots) if old is None or slots > have_slots or lanes > have_rows else old
        attend, positions = _lane_state(new)
        if old is not None and used:
            shift = at - now
            for mine, theirs in zip((*new.keys, *new.values), (*old.keys, *old.values), strict=True):
                block = theirs[:used, :, low:now].clone() if mine is theirs else theirs[:used, :, low:now]
                mine[:used, :, low + shift:at] = block
            assert self._attend is not None and self._positions is not None
            attend[:used, :, :, low + shift:at] = self._attend[:used, :, :, low:now]
            positions[:used] = self._positions[:used]
            self._starts = [start + shift for start in self._starts]
        self._lanes, self._attend, self._positions, self._now = new, attend, positions, at

    def _load(self, lane: int, batch: _Batch, decoder: FastDecoder) -> None:
        """Put a prefilled batch's keys and values (left-padded to its width) in its lanes, ending before the current
        slot (where the lanes are its decoder's own, they are there already)."""
        import torch

        lanes, now, width, count = self._lanes, self._now, batch.width, len(batch.rows)
        assert lanes is not None
        if lanes is not decoder:
            for mine, theirs in zip((*lanes.keys, *lanes.values), (*decoder.keys, *decoder.values), strict=True):
                mine[lane:lane + count, :, now - width:now] = theirs[:, :, :width]
        if self._attend is None or self._positions is None:
            self._attend, self._positions = _lane_state(lanes)
        device = lanes.keys[0].device
        lengths = torch.tensor([len(row.prompt) for row in batch.rows], device=device)
        slots = torch.arange(lanes.keys[0].shape[2], device=device)
        self._attend[lane:lane + count, 0, 0] = (slots >= now - lengths[:, None]) & (slots < now)
        self._positions[lane:lane + count, 0] = lengths
        self._starts += (now - lengths).tolist()

    def _settle(self) -> None:
        """Nothing decodes: the model's mode as it was, the lanes released."""
        if self.groups:
            return
        if self._training:
            self.model.train()
            self._training = False
        self._lanes = self._attend = self._positions = None
        self._starts, self._now = [], 0


def _lane_state(lanes: FastDecoder) -> tuple[torch.Tensor, torch.Tensor]:
    """Empty per-lane attention masks ``[lanes, 1, 1, slots]`` and next positions ``[lanes, 1]`` for ``lanes``."""
    import torch

    rows, _, slots, _ = lanes.keys[0].shape
    device = lanes.keys[0].device
    return (torch.zeros((rows, 1, 1, slots), dtype=torch.bool, device=device),
            torch.zeros((rows, 1), dtype=torch.long, device=device))
