"""Inspect AI tasks, scorers and model provider (see DESIGN.md)."""
