"""Every package re-exports its public API, and importing the package has no heavy side effects."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ["openenv_train.core", "openenv_train.server", "openenv_train.client", "openenv_train.launch", "openenv_train.envs",
            "openenv_train.sandbox", "openenv_train.trace", "openenv_train.harbor", "openenv_train.policy", "openenv_train.pool",
            "openenv_train.rubrics", "openenv_train.evals", "openenv_train.integrations",
            "openenv_train.integrations.trl", "openenv_train.integrations.skyrl", "openenv_train.integrations.art",
            "openenv_train.integrations.miles",
            "openenv_train.recipes", "openenv_train.recipes.wordle",
            "openenv_train.web", "openenv_train.cli"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_names_resolve(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__, f"{name} exports nothing"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names missing attributes: {missing}"
    assert len(set(module.__all__)) == len(module.__all__)


def test_import_is_light_and_side_effect_free() -> None:
    code = (
        "import sys, logging, asyncio; before = set(sys.modules); import openenv_train; "
        "new = set(sys.modules) - before; "
        "heavy = [m for m in ('ray', 'torch', 'trl', 'docker', 'websockets', 'pydantic') if m in new]; "
        "print(heavy, logging.getLogger().handlers)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] []"
