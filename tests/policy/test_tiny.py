"""The tiny offline model: built from config, loaded by path, deterministic, with a template TRL recognises."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openenv_train.policy import build_tiny_model
from openenv_train.policy._tiny.chat_template import QWEN2_5_CHAT_TEMPLATE
from tests.policy.conftest import ADD_TOOL


def test_loads_by_path_with_auto_classes(tiny_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_path)
    params = sum(p.numel() for p in model.parameters())
    assert 100_000 < params < 5_000_000
    assert model.config.vocab_size == len(tokenizer)
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    assert tokenizer.chat_template == QWEN2_5_CHAT_TEMPLATE
    for token in ("<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>"):
        assert len(tokenizer.encode(token)) == 1, token
    text = "Héllo wörld 123 😀\n\n  x"
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_same_seed_same_files_other_seed_other_weights(tiny_path: Path, tmp_path: Path) -> None:
    again = build_tiny_model(tmp_path / "again", seed=0)
    for f in tiny_path.iterdir():
        assert (again / f.name).read_bytes() == f.read_bytes(), f.name
    other = build_tiny_model(tmp_path / "other", seed=1, layers=1, hidden_size=64, intermediate_size=64)
    assert (other / "tokenizer.json").read_bytes() == (tiny_path / "tokenizer.json").read_bytes()
    assert (other / "model.safetensors").read_bytes() != (tiny_path / "model.safetensors").read_bytes()
    with pytest.raises(ValueError, match="must divide"):
        build_tiny_model(tmp_path / "bad", hidden_size=66)


def test_template_renders_tools_calls_and_results(tiny: tuple[Any, Any]) -> None:
    _, tokenizer = tiny
    messages = [
        {"role": "user", "content": "What is 2 plus 3?"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3}}}]},
        {"role": "tool", "name": "add", "content": "5"},
    ]
    text = tokenizer.apply_chat_template(messages, tools=[ADD_TOOL], tokenize=False, add_generation_prompt=True)
    assert '<tools>\n{"type": "function", "function": {"name": "add"' in text
    assert '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call><|im_end|>' in text
    assert "<|im_start|>user\n<tool_response>\n5\n</tool_response><|im_end|>\n<|im_start|>assistant\n" in text
    ids = tokenizer.apply_chat_template(messages, tools=[ADD_TOOL], add_generation_prompt=True, return_dict=False)
    assert tokenizer.decode(ids) == text


def test_trl_recognises_the_template(tiny: tuple[Any, Any]) -> None:
    chat_template_utils = pytest.importorskip("trl.chat_template_utils", reason="trl is not installed")
    _, tokenizer = tiny
    assert tokenizer.chat_template == chat_template_utils.qwen2_5_chat_template
    assert chat_template_utils.supports_tool_calling(tokenizer)
    assert chat_template_utils.is_chat_template_prefix_preserving(tokenizer)
    parsed = chat_template_utils.add_response_schema(tokenizer.__class__.from_pretrained(tokenizer.name_or_path))
    reply = parsed.parse_response('<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call><|im_end|>',
                                  prefix="")
    assert reply["tool_calls"][0]["function"] == {"name": "add", "arguments": {"a": 2, "b": 3}}
