"""The rubrics and evals packages re-export their public API; importing openenv_train loads neither."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest


@pytest.mark.parametrize("name", ["openenv_train.rubrics", "openenv_train.evals"])
def test_all_names_resolve(name: str) -> None:
    if name.endswith("evals"):
        pytest.importorskip("inspect_ai")
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert module.__all__ and not missing and len(set(module.__all__)) == len(module.__all__)


def test_rubrics_import_is_light() -> None:
    code = ("import sys; import openenv_train.rubrics; "
            "print([m for m in ('inspect_ai', 'torch', 'trl', 'httpx', 'datasets') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
