"""tests/verifiers run in the verifiers venv (``.ci/run`` builds ``.venv-verifiers``); elsewhere they skip.

With ``OPENENV_TRAIN_REQUIRE_VERIFIERS=1`` (CI's verifiers venv) a missing verifiers fails the run instead.
"""

from __future__ import annotations

import os

if os.environ.get("OPENENV_TRAIN_REQUIRE_VERIFIERS") == "1":
    import verifiers.v1  # noqa: F401  (an ImportError here fails the run: CI must not skip these tests)
