"""Tiny chat models built offline, for tests and quick runs: the model (``model``), the character-level tokenizer
(``char_tokenizer``) and Qwen2.5's chat template (``chat_template``)."""
