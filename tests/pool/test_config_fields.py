"""PoolConfig's fields carry their help once (``metadata``), and the package loads it without the pool itself."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

from openenv_train.core import config_options
from openenv_train.pool import PoolConfig


def test_every_field_has_its_help_in_metadata() -> None:
    missing = [f.name for f in dataclasses.fields(PoolConfig) if not str(f.metadata.get("help", "")).strip()]
    assert not missing, f"PoolConfig fields without help: {missing}"


def test_command_line_options_are_the_scalar_fields() -> None:
    options = {o.name: o for o in config_options(PoolConfig)}
    assert {"env_vars", "server_args", "sampling", "actor_resources"}.isdisjoint(options)  # mappings and lists
    assert options["num_actors"].flag == "--num-actors" and options["num_actors"].default == 2
    assert options["episode_timeout_s"].help == dataclasses.fields(PoolConfig)[4].metadata["help"]


def test_importing_the_package_loads_the_config_only() -> None:
    code = ("import sys, openenv_train.pool as p; print(sorted(m for m in ('openenv_train.trace', 'openenv_train.policy',"
            " 'pyarrow', 'ray') if m in sys.modules)); p.RolloutPool; print('openenv_train.pool._pool' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "True"]
