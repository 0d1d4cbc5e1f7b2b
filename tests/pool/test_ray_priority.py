"""The pool's private Ray runs its workers (the actors and the env servers they start) at the driver's priority,
not at Ray's default nice 15, which left them a few percent of a core beside any other busy process."""

from __future__ import annotations

import os
from typing import Any


def test_workers_run_at_the_drivers_priority(ray_local: Any) -> None:
    @ray_local.remote
    def niceness() -> int:
        return os.nice(0)

    assert ray_local.get(niceness.remote(), timeout=300) == os.nice(0)
