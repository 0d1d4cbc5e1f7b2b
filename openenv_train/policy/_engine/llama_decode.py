"""A lean decode step for Llama-family causal LMs (Qwen2, Llama): a preallocated KV cache and one pass over the
model's own modules per token, without transformers' per-step mask building, cache objects and output classes.

It calls the model's modules (norms, projections, MLPs, rotary embedding, ``apply_rotary_pos_emb`` of the model's
own modeling file) and ``scaled_dot_product_attention`` exactly as transformers' sdpa path does for one query
token (grouped-query heads packed as in ``pack_gqa``), so logits equal transformers' forward up to float rounding
(tests compare logprobs with a teacher-forced forward pass). Any other architecture, attention implementation or
a model with attention dropout in training mode takes transformers' forward (:func:`FastDecoder.build` returns
None). A prompt's prefill runs through transformers' forward and its cache is copied into the static buffers,
except where earlier tokens' keys and values are reused (:mod:`.prefix_cache`): then :meth:`FastDecoder.prefill`
runs only the new tokens, with the same modules.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["FastDecoder"]

#: (model class, attention class) pairs whose decode step this module reproduces.
_SUPPORTED = {("Qwen2ForCausalLM", "Qwen2Attention"), ("LlamaForCausalLM", "LlamaAttention")}


class FastDecoder:
    """Decode steps over a static KV cache for one batch."""

    def __init__(self, model: Any, rows: int, slots: int) -> None:
        import torch

        inner = model.model
        self.model, self.inner = model, inner
        self.layers = list(inner.layers)
        first = self.layers[0].self_attn
        self.head_dim = first.head_dim
        self.groups = first.num_key_value_groups
        self.rotary = sys.modules[type(first).__module__].apply_rotary_pos_emb
        param = inner.embed_tokens.weight
        kv_heads = first.k_proj.out_features // self.head_dim
        self.keys: list[torch.Tensor] = [param.new_zeros((rows, kv_heads, slots, self.head_dim)) for _ in self.layers]
        self.values: list[torch.Tensor] = [torch.zeros_like(k) for k in self.keys]
        self.sdpa = torch.nn.functional.scaled_dot_product_attention

    @staticmethod
    def supports(model: Any) -> bool:
        """Whether this module reproduces the model's forward (architecture, sdpa attention, no dropout, no hooks)."""
        try:
            cfg = model.config
            attention = model.model.layers[0].self_attn
            return not ((type(model).__name__, type(attention).__name__) not in _SUPPORTED
                        or getattr(cfg, "_attn_implementation", None) != "sdpa"
                        or getattr(cfg, "use_sliding_window", False) or getattr(cfg, "sliding_window", None) and any(
                            getattr(layer.self_attn, "sliding_window", None) for layer in model.model.layers)
                        or (model.training and getattr(cfg, "attention_dropout", 0.0))
                        or model.model._forward_hooks or model._forward_hooks)
        except (AttributeError, IndexError, TypeError):
            return False

    @staticmethod
    def build(model: Any, cache: Any, rows: int, width: int, steps: int, *,
              spread: torch.Tensor | None = None) -> FastDecoder | None:
        """A fast decoder holding transformers' prefilled ``cache`` (``width`` slots), or None when the model is
        not one it reproduces. ``spread``: the cache holds distinct prompts, and row ``i`` takes ``spread[i]``'s."""
        if not FastDecoder.supports(model):
            return None
        decoder = FastDecoder(model, rows, width + steps)
        for i, (keys, values) in enumerate(zip(decoder.keys, decoder.values, strict=True)):
            k, v = cache.layers[i].keys, cache.layers[i].values
            if k.shape[-2] != width or k.shape[1] != keys.shape[1]:
                return None
            if spread is not None:
                k, v = k[spread], v[spread]
            keys[:, :, :width], values[:, :, :width] = k, v
        return decoder

    def prefill(self, tokens: torch.Tensor, positions: torch.Tensor, valid: torch.Tensor, end: int,
                mask: torch.Tensor) -> torch.Tensor:
        """Logits ``[rows, vocab]`` after a block of new tokens per row, whose keys and values go to the slots
        ``end - S .. end - 1``; the slots before hold each row's earlier tokens (e.g. a cached prefix).

        Args:
            tokens: ``[rows, S]`` ids, left-padded.
            positions: ``[rows, S]`` position ids.
            valid: ``[rows, S]`` bool, False at padding: its keys and values are not written.
            end: One past the block's last slot.
            mask: ``[rows, 1, S, end]`` bool, True where a query attends (causal, padding excluded).
        """
        import torch

        rows, block = tokens.shape
        start = end - block
        keep = valid[:, None, :, None]
        x = self.inner.embed_tokens(tokens)
        cos, sin = self.inner.rotary_emb(x, positions)
        for layer, keys, values in zip(self.layers, self.keys, self.values, strict=True):
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            q = attn.q_proj(h).view(rows, block, -1, self.head_dim).transpose(1, 2)
            k = attn.k_proj(h).view(rows, block, -1, self.head_dim).transpose(1, 2)
            v = attn.v_proj(h).view(rows, block, -1, self.head_dim).transpose(1, 2)
            q, k = self.rotary(q, k, cos, sin)
            keys[:, :, start:end] = torch.where(keep, k, keys[:, :, start:end])
            values[:, :, start:end] = torch.where(keep, v, values[:, :, start:end])
            all_k, all_v = keys[:, :, :end], values[:, :, :end]
            if self.groups > 1:  # as transformers' repeat_kv
                all_k = all_k.repeat_interleave(self.groups, dim=1)
                all_v = all_v.repeat_interleave(self.groups, dim=1)
            out = self.sdpa(q, all_k, all_v, attn_mask=mask, scale=attn.scaling)
            x = x + attn.o_proj(out.transpose(1, 2).reshape(rows, block, -1))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.model.lm_head(self.inner.norm(x[:, -1:]))[:, -1, :]

    def slice(self, row: int, start: int, end: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Copies of one row's keys and values in slots ``start .. end - 1``, per layer."""
        return [(k[row, :, start:end].clone(), v[row, :, start:end].clone())
                for k, v in zip(self.keys, self.values, strict=True)]

    def load(self, row: int, start: int, layers: Any) -> None:
        """Put keys and values (as :meth:`slice` returns them) into one row's slots from ``start``."""
        for (k, v), keys, values in zip(layers, self.keys, self.values, strict=True):
            keys[row, :, start:start + k.shape[1]] = k
            values[row, :, start:start + v.shape[1]] = v

    def step(self, tokens: torch.Tensor, positions: torch.Tensor, slot: int, mask: torch.Tensor) -> torch.Tensor:
        """Logits ``[rows, vocab]`` for one new token per row, written to cache slot ``slot``.

        Args:
            tokens: ``[rows]`` token ids.
            positions: ``[rows, 1]`` position ids.
            slot: Index of this token in the cache (prompt width + step).
            mask: ``[rows, 1, 1, slot + 1]`` bool, True where a row attends.
        """
        rows = tokens.shape[0]  # the first rows of the buffer (an engine's lanes may not all be in use)
        x = self.inner.embed_tokens(tokens[:, None])
        cos, sin = self.inner.rotary_emb(x, positions)
        for layer, keys, values in zip(self.layers, self.keys, self.values, strict=True):
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            q = attn.q_proj(h).view(rows, 1, -1, self.head_dim).transpose(1, 2)
            k = attn.k_proj(h).view(rows, 1, -1, self.head_dim).transpose(1, 2)
            v = attn.v_proj(h).view(rows, 1, -1, self.head_dim).transpose(1, 2)
            q, k = self.rotary(q, k, cos, sin)
            keys[:rows, :, slot] = k[:, :, 0]
            values[:rows, :, slot] = v[:, :, 0]
            heads = q.shape[1]
            if self.groups > 1:
                q = q.reshape(rows, heads // self.groups, self.groups, self.head_dim)
            out = self.sdpa(q, keys[:rows, :, : slot + 1], values[:rows, :, : slot + 1], attn_mask=mask,
                            scale=attn.scaling)
            out = out.reshape(rows, heads, 1, self.head_dim).transpose(1, 2).reshape(rows, 1, heads * self.head_dim)
            x = x + attn.o_proj(out)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.model.lm_head(self.inner.norm(x))[:, -1, :]
