"""A local Ray for each test module (so the ``ray start`` test owns the machine's Ray alone)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.pool import _support


@pytest.fixture(scope="module")
def ray_local() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray[default]==2.60.0')")
    ray.cloudpickle.register_pickle_by_value(_support)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
