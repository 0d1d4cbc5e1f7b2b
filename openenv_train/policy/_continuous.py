"""Continuous batching: batches that join a decode already running, one forward pass per step for all of them.

A batch that arrives while others decode does not wait for them to end: its prompts are prefilled (as a batch of
its own, prefix cache and shared prompts included), their keys and values move into the running decode's lanes,
and from the next step on one forward pass serves every row (:meth:`~._llama_decode.FastDecoder.step_lanes`: each
row's tokens fill its lane from slot 0, so rows that began at different steps share one cache). Each batch keeps
its own sampling state (its :class:`~._generation._Batch`: seeds, draws, guides, stops, streams), so a seeded row
samples what it would alone, and its rows' lanes are freed when its last row ends. A front end that answers one
batch while the next decodes keeps the engine busy instead of decoding in lock step with it.

Only models the fast decoder reproduces decode this way (:meth:`ContinuousDecode.supports`); others decode a batch
at a time. Batches of different policy versions never share a step: one of a new version waits until the
running ones end.

torch is imported when a batch runs, so importing this module is cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._generation import Row, RowOutput, _Batch
from ._prefix_cache import PrefixCache, weights_fingerprint

if TYPE_CHECKING:
    import torch

    from ._llama_decode import FastDecoder

__all__ = ["ContinuousDecode"]


@dataclass(eq=False)
class _Group:
    """One admitted batch: its decode state, its first lane, its step, its prompts' lengths."""

    key: Any
    batch: _Batch
    lane: int
    prompts: torch.Tensor
    longest: int
    step: int = 0
    logits: torch.Tensor | None = None


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
        self._training = False

    @staticmethod
    def supports(model: Any) -> bool:
        """Whether ``model`` decodes this way (the fast decoder reproduces it)."""
        from ._llama_decode import FastDecoder

        return FastDecoder.supports(model)

    @property
    def idle(self) -> bool:
        """No batch is decoding."""
        return not self.groups

    def admits(self, version: Any) -> bool:
        """Whether a batch of ``version`` may join now."""
        return self.idle or version == self.version

    def add(self, key: Any, rows: list[Row], version: Any = None, on_step: Callable[[], None] | None = None) -> None:
        """Prefill a batch's prompts and let its rows decode from the next :meth:`step` on.

        Raises:
            ValueError: ``version`` differs from the running batches' (see :meth:`admits`).
            Exception: whatever the model raises while prefilling (nothing else is affected).
        """
        import torch

        if not self.admits(version):
            raise ValueError(f"a batch of version {version!r} cannot join batches of version {self.version!r}")
        with torch.inference_mode():
            if self.idle:
                self._training = bool(getattr(self.model, "training", False))
                if self._training:
                    self.model.eval()
                if self.prefix is not None:
                    self.prefix.check_weights(weights_fingerprint(self.model, version))
                self.version = version
            batch = _Batch(self.model, self.tokenizer, rows, self.pad_id, on_step)
            try:
                logits = batch.prefill(fast=True, prefix=self.prefix, slots=batch.width)
            except BaseException:
                self._settle()
                raise
            assert batch.decoder is not None
            lane = sum(len(g.batch.rows) for g in self.groups)
            prompts = torch.tensor([len(r.prompt) for r in rows], device=batch.device)
            group = _Group(key, batch, lane, prompts, batch.width, logits=logits)
            self._reserve(lane + len(rows), batch.width + batch.steps)
            self._load(group, batch.decoder)
            batch.decoder = None  # its keys and values now live in the lanes
            self.groups.append(group)

    def step(self) -> list[tuple[Any, list[RowOutput] | BaseException]]:
        """One token for every running row: the batches that ended, with their outputs; if the forward pass
        raised, every running batch with that error (they are dropped)."""
        import torch

        ended: list[tuple[Any, list[RowOutput] | BaseException]] = []
        with torch.inference_mode():
            tokens: list[torch.Tensor] = []
            for group in list(self.groups):
                assert group.logits is not None
                chosen = group.batch.sample(group.step, group.logits)
                if chosen is None:
                    ended.append((group.key, self._finish(group)))
                else:
                    tokens.append(chosen)
            if not self.groups:
                self._settle()
                return ended
            lengths = torch.cat([g.prompts + g.step for g in self.groups])
            end = max(g.longest + g.step for g in self.groups) + 1
            try:
                assert self._lanes is not None
                logits = self._lanes.step_lanes(torch.cat(tokens), lengths, end)
            except Exception as exc:
                ended += [(g.key, exc) for g in self.groups]
                self.groups.clear()
                self._settle()
                return ended
            for group in self.groups:
                group.logits = logits[group.lane: group.lane + len(group.batch.rows)]
                group.step += 1
        return ended

    def _finish(self, group: _Group) -> list[RowOutput]:
        """A batch's outputs; its prompts and completions go to the prefix cache, its lanes to the batches after."""
        lanes, first, count = self._lanes, group.lane, len(group.batch.rows)
        assert lanes is not None
        if self.prefix is not None:
            group.batch.store(self.prefix, lambda i, prompt, fed: lanes.slice(first + i, 0, prompt + fed))
        outputs = group.batch.outputs()
        index = self.groups.index(group)
        later = self.groups[index + 1:]
        if later:
            used = later[-1].lane + len(later[-1].batch.rows)
            end = max(g.longest + g.step for g in later) + 1
            for keys in (*lanes.keys, *lanes.values):
                keys[first:used - count, :, :end] = keys[first + count:used, :, :end].clone()
            for g in later:
                g.lane -= count
        del self.groups[index]
        return outputs

    def _reserve(self, rows: int, slots: int) -> None:
        """Lanes for ``rows`` rows of ``slots`` slots (a larger buffer takes the running rows' keys and values)."""
        from ._llama_decode import FastDecoder

        old = self._lanes
        if old is not None and old.keys[0].shape[0] >= rows and old.keys[0].shape[2] >= slots:
            return
        have_rows, have_slots = (old.keys[0].shape[0], old.keys[0].shape[2]) if old is not None else (0, 0)
        new = FastDecoder(self.model, max(rows, have_rows), max(slots, have_slots))
        if old is not None:
            for mine, theirs in zip((*new.keys, *new.values), (*old.keys, *old.values), strict=True):
                mine[:have_rows, :, :have_slots] = theirs
        self._lanes = new

    def _load(self, group: _Group, decoder: FastDecoder) -> None:
        """Move a prefilled batch's keys and values (left-padded to its width) into its lanes, from slot 0."""
        lanes, width = self._lanes, group.batch.width
        assert lanes is not None
        for i, row in enumerate(group.batch.rows):
            n = len(row.prompt)
            for mine, theirs in zip((*lanes.keys, *lanes.values), (*decoder.keys, *decoder.values), strict=True):
                mine[group.lane + i, :, :n] = theirs[i, :, width - n:width]

    def _settle(self) -> None:
        """Nothing decodes: the model's mode as it was, the lanes released."""
        if self.groups:
            return
        if self._training:
            self.model.train()
            self._training = False
        self._lanes = None

