"""A lean decode step for Llama-family causal LMs (Qwen2, Llama): a preallocated KV cache and one pass over the
model's own modules per token, without transformers' per-step mask building, cache objects and output classes.

It calls the model's modules (norms, projections, MLPs, rotary embedding, ``apply_rotary_pos_emb`` of the model's
own modeling file) and ``scaled_dot_product_attention`` exactly as transformers' sdpa path does for one query
token (grouped-query heads packed as in ``pack_gqa``), so logits equal transformers' forward up to float rounding
(tests compare logprobs with a teacher-forced forward pass). Any other architecture, attention implementation or
a model with attention dropout in training mode takes transformers' forward (:func:`FastDecoder.build` returns
None). The prefill always runs through transformers' forward; its cache is copied into the static buffers.
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

    def __init__(self, model: Any, cache: Any, rows: int, width: int, steps: int) -> None:
        import torch

        inner = model.model
        self.model, self.inner = model, inner
        self.layers = list(inner.layers)
        first = self.layers[0].self_attn
        self.head_dim = first.head_dim
        self.groups = first.num_key_value_groups
        self.rotary = sys.modules[type(first).__module__].apply_rotary_pos_emb
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        for i in range(len(self.layers)):
            k, v = cache.layers[i].keys, cache.layers[i].values
            if k.shape[-2] != width:
                raise ValueError("unexpected prefill cache length")
            buf_k = k.new_zeros((rows, k.shape[1], width + steps, k.shape[-1]))
            buf_v = v.new_zeros((rows, v.shape[1], width + steps, v.shape[-1]))
            buf_k[:, :, :width], buf_v[:, :, :width] = k, v
            self.keys.append(buf_k)
            self.values.append(buf_v)
        self.sdpa = torch.nn.functional.scaled_dot_product_attention

    @staticmethod
    def build(model: Any, cache: Any, rows: int, width: int, steps: int) -> FastDecoder | None:
        """A fast decoder for this model and prefilled cache, or None when the model is not one it reproduces."""
        try:
            cfg = model.config
            attention = model.model.layers[0].self_attn
            if ((type(model).__name__, type(attention).__name__) not in _SUPPORTED
                    or getattr(cfg, "_attn_implementation", None) != "sdpa"
                    or getattr(cfg, "use_sliding_window", False) or getattr(cfg, "sliding_window", None) and any(
                        getattr(layer.self_attn, "sliding_window", None) for layer in model.model.layers)
                    or (model.training and getattr(cfg, "attention_dropout", 0.0))
                    or model.model._forward_hooks or model._forward_hooks):
                return None
            return FastDecoder(model, cache, rows, width, steps)
        except (AttributeError, IndexError, TypeError, ValueError):
            return None

    def step(self, tokens: torch.Tensor, positions: torch.Tensor, slot: int, mask: torch.Tensor) -> torch.Tensor:
        """Logits ``[rows, vocab]`` for one new token per row, written to cache slot ``slot``.

        Args:
            tokens: ``[rows]`` token ids.
            positions: ``[rows, 1]`` position ids.
            slot: Index of this token in the cache (prompt width + step).
            mask: ``[rows, 1, 1, slot + 1]`` bool, True where a row attends.
        """
        rows = tokens.shape[0]
        x = self.inner.embed_tokens(tokens[:, None])
        cos, sin = self.inner.rotary_emb(x, positions)
        for layer, keys, values in zip(self.layers, self.keys, self.values, strict=True):
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            q = attn.q_proj(h).view(rows, 1, -1, self.head_dim).transpose(1, 2)
            k = attn.k_proj(h).view(rows, 1, -1, self.head_dim).transpose(1, 2)
            v = attn.v_proj(h).view(rows, 1, -1, self.head_dim).transpose(1, 2)
            q, k = self.rotary(q, k, cos, sin)
            keys[:, :, slot] = k[:, :, 0]
            values[:, :, slot] = v[:, :, 0]
            heads = q.shape[1]
            if self.groups > 1:
                q = q.reshape(rows, heads // self.groups, self.groups, self.head_dim)
            out = self.sdpa(q, keys[:, :, : slot + 1], values[:, :, : slot + 1], attn_mask=mask,
                            scale=attn.scaling)
            out = out.reshape(rows, heads, 1, self.head_dim).transpose(1, 2).reshape(rows, 1, heads * self.head_dim)
            x = x + attn.o_proj(out)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.model.lm_head(self.inner.norm(x))[:, -1, :]
