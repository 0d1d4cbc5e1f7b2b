"""A character-level chat tokenizer for tiny models: one token per character, a compact chat template.

Byte-level BPE merges letters into arbitrary pieces (``[raise`` becomes ``[r`` ``ais`` ``e``), so "letter i of a
word" has no stable token for a small model to line up with anything. Here every character is one token and the
chat costs two tokens a message (a role token and an end token), so a Wordle turn is ``<|user|>crane XYXXG<|end|>``.
"""

from __future__ import annotations

import string
from typing import Any

__all__ = ["CHAR_CHAT_TEMPLATE", "CHAR_SPECIAL_TOKENS", "DEFAULT_ALPHABET", "build_char_tokenizer", "encode_char_chat",
           "is_char_tokenizer"]

#: Pad, end of message, and one token per role; ``<|end|>`` is the EOS token and ends every message.
CHAR_SPECIAL_TOKENS = ("<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>")
#: Lower- and upper-case letters, digits, punctuation, space and newline.
DEFAULT_ALPHABET = string.ascii_letters + string.digits + string.punctuation + " \n"

#: One role token, the content and ``<|end|>`` per message; assistant turns are marked for TRL's
#: ``assistant_only_loss`` (``{% generation %}``); the generation prompt is the assistant role token.
CHAR_CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{- '<|assistant|>' -}}{%- generation -%}{{- message['content'] + '<|end|>' -}}{%- endgeneration -%}"
    "{%- else -%}"
    "{{- '<|' + message['role'] + '|>' + message['content'] + '<|end|>' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}"
)


def is_char_tokenizer(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` uses :data:`CHAR_CHAT_TEMPLATE` (so :func:`encode_char_chat` renders it exactly)."""
    return getattr(tokenizer, "chat_template", None) == CHAR_CHAT_TEMPLATE


def encode_char_chat(tokenizer: Any, messages: list[dict[str, str]]) -> tuple[list[int], list[int]]:
    """Token ids of a conversation under :data:`CHAR_CHAT_TEMPLATE` and its assistant mask, without Jinja.

    The same as ``apply_chat_template(messages, tokenize=True, return_assistant_tokens_mask=True)`` (about a
    hundred times faster: SFT on tens of thousands of games spends seconds here, not minutes).

    >>> tok = build_char_tokenizer()
    >>> chat = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "crane"}]
    >>> ids, mask = encode_char_chat(tok, chat)
    >>> full = tok.apply_chat_template(chat, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    >>> (ids, mask) == (full["input_ids"], full["assistant_masks"])
    True
    """
    vocab = tokenizer.get_vocab()
    unk, end = vocab["<|pad|>"], vocab["<|end|>"]
    ids: list[int] = []
    mask: list[int] = []
    for message in messages:
        body = [vocab.get(c, unk) for c in message["content"]]
        body.append(end)
        ids.append(vocab[f"<|{message['role']}|>"])
        ids += body
        mask.append(0)
        mask += [int(message["role"] == "assistant")] * len(body)
    return ids, mask


def build_char_tokenizer(alphabet: str = DEFAULT_ALPHABET) -> Any:
    """A tokenizer with one token per character of ``alphabet`` plus :data:`CHAR_SPECIAL_TOKENS`.

    Characters outside the alphabet become ``<|pad|>`` (the unknown token); decoding joins tokens as they are.

    Example:
        >>> tok = build_char_tokenizer()
        >>> tok.convert_ids_to_tokens(tok.encode("crane XYXXG"))
        ['c', 'r', 'a', 'n', 'e', ' ', 'X', 'Y', 'X', 'X', 'G']
        >>> tok.apply_chat_template([{"role": "user", "content": "go"}], add_generation_prompt=True, tokenize=False)
        '<|user|>go<|end|><|assistant|>'

    Returns:
        A ``transformers.PreTrainedTokenizerFast``; the same alphabet always gives the same ids.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    chars = list(dict.fromkeys(alphabet))
    vocab = {tok: i for i, tok in enumerate([*CHAR_SPECIAL_TOKENS, *chars])}
    # BPE without merges splits any text into its characters (a WordLevel model would need a pre-tokenizer)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<|pad|>"))
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in CHAR_SPECIAL_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|end|>",
        pad_token="<|pad|>",
        unk_token="<|pad|>",
        chat_template=CHAR_CHAT_TEMPLATE,
        model_max_length=4096,
        clean_up_tokenization_spaces=False,
        split_special_tokens=False,
    )
