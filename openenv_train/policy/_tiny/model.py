"""A tiny chat model built offline: a Qwen2-style transformer with random weights and a locally trained
byte-level BPE tokenizer that carries Qwen2.5's chat template (tools included).

It knows nothing, but it has every part a real chat model has (special tokens, template, generation config), so
trainers, the policy endpoint and recipes run end to end on a CPU with no download.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .char_tokenizer import build_char_tokenizer
from .chat_template import QWEN2_5_CHAT_TEMPLATE

__all__ = ["TinyModelConfig", "build_tiny_model", "build_tiny_tokenizer", "teach_tiny_model"]

#: Special tokens of the chat format (Qwen's names); the first is the pad token, the third ends a turn.
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
#: Tags the template writes around tool calls and tool results; added tokens, not special (as in Qwen2.5).
TOOL_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
#: Qwen2's pre-tokenizer split: contractions, letters, single digits, punctuation runs, newlines, spaces.
_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_WORDS = (
    "the a an and or but if then else of to in on at for with from by is are was be have has do does can will "
    "you I we they it this that what which who how why when where yes no not all any some more most one two three "
    "hello hi please thanks help assistant user system tool tools call function name arguments result error "
    "answer question guess word letter game board move step reward done state action observation turn score "
    "green yellow gray chess pawn knight bishop rook queen king sql table select from where count sum python code "
    "print return def class import list dict int str float true false null number value add multiply search "
    "weather city today time file read write run test pass fail ok next left right up down start end"
).split()


@dataclass(frozen=True)
class TinyModelConfig:
    """Sizes of the tiny model; the defaults give about 0.4M parameters."""

    vocab_size: int = 1024
    """Tokenizer vocabulary (bytes, merges and the chat tokens)."""
    hidden_size: int = 128
    """Width of the residual stream."""
    intermediate_size: int = 256
    """Width of each MLP."""
    layers: int = 2
    """Transformer blocks."""
    heads: int = 4
    """Attention heads (``hidden_size`` must divide by it)."""
    kv_heads: int = 2
    """Key/value heads (grouped-query attention; ``heads`` must divide by it)."""
    max_context: int = 4096
    """Longest prompt + completion, in tokens."""
    init_range: float = 0.2
    """Std of the random weights; transformers' 0.02 makes so small a model answer the same whatever the prompt."""
    tokenizer: str = "bpe"
    """``bpe``: byte-level BPE with Qwen2.5's chat template; ``char``: one token per character with a compact
    template (:func:`~openenv_train.policy.build_char_tokenizer`; ``vocab_size`` is then unused)."""

    def __post_init__(self) -> None:
        if self.tokenizer not in ("bpe", "char"):
            raise ValueError(f"tokenizer must be 'bpe' or 'char', got {self.tokenizer!r}")
        if self.hidden_size % self.heads or self.heads % self.kv_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must divide by heads ({self.heads}) and heads by kv_heads "
                f"({self.kv_heads}); pick sizes such as hidden_size=64, heads=4, kv_heads=2"
            )
        if self.tokenizer == "bpe" and self.vocab_size < 300:
            raise ValueError(f"vocab_size must be at least 300 (256 bytes plus chat tokens), got {self.vocab_size}")


def _corpus(seed: int = 1234) -> Iterator[str]:
    """Synthetic training text for the tokenizer: chat turns, tool calls, JSON, numbers, the template's prose."""
    rng = random.Random(seed)
    yield QWEN2_5_CHAT_TEMPLATE
    yield "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    for _ in range(400):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 14)))
        name = rng.choice(("add", "multiply", "search", "guess", "move", "run_sql", "get_weather"))
        args = {rng.choice(_WORDS): rng.choice((rng.randint(0, 999), rng.choice(_WORDS))) for _ in range(2)}
        call = json.dumps({"name": name, "arguments": args})
        yield (
            f"<|im_start|>user\n{words.capitalize()}?<|im_end|>\n<|im_start|>assistant\n{words}.<|im_end|>\n"
            f"<|im_start|>assistant\n<tool_call>\n{call}\n</tool_call><|im_end|>\n"
            f"<|im_start|>user\n<tool_response>\n{json.dumps(args)}\n</tool_response><|im_end|>\n"
        )


def build_tiny_tokenizer(vocab_size: int = 1024) -> Any:
    """A byte-level BPE tokenizer trained on a synthetic corpus, with Qwen2.5's chat tokens and template.

    Returns:
        A ``transformers.PreTrainedTokenizerFast``; the same corpus and size always give the same tokenizer.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=QWEN2_5_CHAT_TEMPLATE,
        model_max_length=131072,
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
    )


def build_tiny_model(
    out_dir: str | Path,
    *,
    seed: int = 0,
    vocab_size: int = 1024,
    hidden_size: int = 128,
    intermediate_size: int = 256,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    max_context: int = 4096,
    init_range: float = 0.2,
    tokenizer: str = "bpe",
) -> Path:
    """Build a random-init Qwen2 causal LM and its tokenizer, and save both to ``out_dir``.

    Load them back with ``AutoModelForCausalLM.from_pretrained(path)`` and ``AutoTokenizer.from_pretrained(path)``.
    The same arguments always give the same files (weights depend on ``seed`` only). Takes about a second on a CPU.

    Args:
        out_dir: Folder to write (created if missing; files in it are overwritten).
        seed: Seed of the weight initialisation.
        vocab_size: Tokenizer vocabulary size (the model's embedding matches the tokenizer's full length).
        hidden_size: Width of the model.
        intermediate_size: Width of each MLP.
        layers: Transformer blocks.
        heads: Attention heads.
        kv_heads: Key/value heads.
        max_context: Context length, in tokens.
        init_range: Std of the random weights (see :class:`TinyModelConfig`).
        tokenizer: ``bpe`` (byte-level BPE, Qwen2.5's template) or ``char`` (one token per character).

    Returns:
        The folder, as a ``Path``.

    Raises:
        ValueError: sizes that do not fit together (see :class:`TinyModelConfig`).
    """
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    sizes = TinyModelConfig(vocab_size, hidden_size, intermediate_size, layers, heads, kv_heads, max_context, init_range,
                            tokenizer)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_char_tokenizer() if sizes.tokenizer == "char" else build_tiny_tokenizer(sizes.vocab_size)
    pad_id, eos_id = tok.pad_token_id, tok.eos_token_id
    # transformers loads any qwen2 checkpoint with Qwen2's byte-level tokenizer class; the character tokenizer
    # goes with the same transformer under the llama name, whose checkpoints keep the tokenizer they were saved with
    config_type: Any = LlamaConfig if sizes.tokenizer == "char" else Qwen2Config
    model_type: Any = LlamaForCausalLM if sizes.tokenizer == "char" else Qwen2ForCausalLM
    config = config_type(
        vocab_size=len(tok),
        hidden_size=sizes.hidden_size,
        intermediate_size=sizes.intermediate_size,
        num_hidden_layers=sizes.layers,
        num_attention_heads=sizes.heads,
        num_key_value_heads=sizes.kv_heads,
        max_position_embeddings=sizes.max_context,
        initializer_range=sizes.init_range,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_type(config).eval()
    model.generation_config = GenerationConfig(
        eos_token_id=[eos_id, pad_id], pad_token_id=pad_id, bos_token_id=None, do_sample=True, temperature=1.0
    )
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / "tiny_model.json").write_text(json.dumps({"seed": seed, **asdict(sizes)}, indent=1) + "\n")
    return out


def teach_tiny_model(
    path: str | Path,
    conversations: Sequence[Sequence[dict[str, Any]]],
    *,
    tools: Sequence[dict[str, Any]] | None = None,
    steps: int = 100,
    lr: float = 3e-3,
    seed: int = 0,
) -> Path:
    """Fit a saved tiny model to a few conversations (assistant tokens only) and save it back in place.

    About a hundred steps (a few seconds on a CPU) make greedy decoding reproduce the taught assistant turns,
    tool calls included, so a test or demo gets well-formed replies from a model that was built offline.

    Args:
        path: Folder written by :func:`build_tiny_model`.
        conversations: Chat messages; every assistant turn (with its end-of-turn token) is learned.
        tools: Tool schemas rendered into the prompt, as at inference time.
        steps: Optimiser steps (each over all conversations).
        lr: AdamW learning rate.
        seed: Seed for the optimisation.

    Returns:
        ``path`` as a ``Path``.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    rows = [_assistant_labels(tokenizer, list(c), list(tools) if tools else None) for c in conversations]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.train()
        optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
        for _ in range(steps):
            optimiser.zero_grad()
            for ids, labels in rows:
                out = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels]))
                (out.loss / len(rows)).backward()
            optimiser.step()
    model.eval()
    model.save_pretrained(path)
    return Path(path)


def _assistant_labels(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                      ) -> tuple[list[int], list[int]]:
    """Token ids of a conversation and labels that keep only the assistant turns' tokens (-100 elsewhere)."""
    ids: list[int] = tokenizer.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=False)
    labels = [-100] * len(ids)
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        start = len(tokenizer.apply_chat_template(messages[:i], tools=tools, add_generation_prompt=True,
                                                  tokenize=True, return_dict=False))
        end = len(tokenizer.apply_chat_template(messages[: i + 1], tools=tools, tokenize=True, return_dict=False))
        while end > start and ids[end - 1] != tokenizer.eos_token_id:  # learn up to the end-of-turn token
            end -= 1
        labels[start:end] = ids[start:end]
    return ids, labels
