"""Policy backends: local transformers model, tiny offline model, OpenAI-compatible upstream (see DESIGN.md)."""
