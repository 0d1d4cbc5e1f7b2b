"""Runnable end-to-end jobs: ``python -m openenv_train.recipes.<name>``."""
