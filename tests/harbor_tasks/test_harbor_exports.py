"""openenv_train.harbor re-exports its API and loads datasets / huggingface_hub only when needed."""

from __future__ import annotations

import subprocess
import sys

import openenv_train.harbor as harbor


def test_all_names_resolve() -> None:
    missing = [n for n in harbor.__all__ if not hasattr(harbor, n)]
    assert not missing and len(set(harbor.__all__)) == len(harbor.__all__)


def test_import_does_not_load_datasets() -> None:
    code = ("import sys; import openenv_train.harbor; "
            "print([m for m in ('datasets', 'huggingface_hub', 'torch', 'pandas') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
