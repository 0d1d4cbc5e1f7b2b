"""Whether the ART tests skip: without openpipe-art, unless OPENENV_TRAIN_REQUIRE_ART=1 (CI's ART venv), where
they run and fail on the missing package instead."""

from __future__ import annotations

import importlib.util
import os

ART_MISSING = importlib.util.find_spec("art") is None and os.environ.get("OPENENV_TRAIN_REQUIRE_ART") != "1"
