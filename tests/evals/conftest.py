"""Offline Inspect runs: the tiny model built once per session, HF/Inspect kept off the network."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (pip install inspect-ai)")

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "INSPECT_DISPLAY": "none", "INSPECT_LOG_LEVEL": "warning", "NO_COLOR": "1"}


@pytest.fixture(scope="session", autouse=True)
def offline_tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point ``openenv/tiny`` at a session folder (subprocesses inherit it) and keep everything offline."""
    pytest.importorskip("transformers", reason="transformers is not installed")
    from openenv_train.evals._model import tiny_model_dir

    saved = {k: os.environ.get(k) for k in [*OFFLINE, "OPENENV_TRAIN_TINY_DIR"]}
    os.environ.update(OFFLINE)
    os.environ["OPENENV_TRAIN_TINY_DIR"] = str(tmp_path_factory.mktemp("evals") / "tiny")
    path = tiny_model_dir()
    yield path
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
