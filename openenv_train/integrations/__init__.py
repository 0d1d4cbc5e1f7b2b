"""Trainer adapters: TRL, SkyRL, ART, Unsloth (see DESIGN.md)."""
